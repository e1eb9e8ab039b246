# gtl::data: datasets (synthetic digits, MNIST IDX files, text windows with the byte tokenizer
# and the embedded corpus) and the prefetching DataLoader.
gtl_core_sources(
  CPU gtl/data/dataset.cpp gtl/data/synthetic_digits.cpp gtl/data/idx_reader.cpp
      gtl/data/data_loader.cpp gtl/data/byte_tokenizer.cpp gtl/data/text_dataset.cpp
      gtl/data/corpus.cpp)
