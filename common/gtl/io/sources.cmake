# gtl::io: the checkpoint file format (and the CRC-32 that guards it).
gtl_core_sources(CPU gtl/io/crc32.cpp gtl/io/checkpoint_file.cpp)
