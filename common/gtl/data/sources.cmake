# gtl::data: datasets (synthetic digits, MNIST IDX files) and the prefetching DataLoader.
gtl_core_sources(
  CPU gtl/data/dataset.cpp gtl/data/synthetic_digits.cpp gtl/data/idx_reader.cpp
      gtl/data/data_loader.cpp)
