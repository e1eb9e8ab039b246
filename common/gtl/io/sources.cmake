# gtl::io: the checkpoint file format (and the CRC-32 that guards it); the result files of
# real-process runs.
gtl_core_sources(CPU gtl/io/crc32.cpp gtl/io/checkpoint_file.cpp gtl/io/result_file.cpp)
