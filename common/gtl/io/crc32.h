// CRC-32 (the IEEE 802.3 polynomial of zip, gzip and PNG), used to detect corrupted checkpoints.
//
// A checksum over the payload turns a flipped bit on disk or a half-copied file into a clear
// error at load time instead of silently wrong weights. CRC-32 catches every burst error of up
// to 32 bits and, unlike a plain sum, any reordering of bytes.
#pragma once

#include <cstddef>
#include <cstdint>

namespace gtl::io {

// Continues a running CRC: crc32(b, nb, crc32(a, na)) == crc32 of a followed by b.
uint32_t crc32(const void* data, std::size_t bytes, uint32_t crc = 0);

}  // namespace gtl::io
