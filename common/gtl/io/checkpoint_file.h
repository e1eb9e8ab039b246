// CheckpointFile: named tensors and scalars, saved to and loaded from one versioned binary file.
//
//   CheckpointFile ckpt;
//   ckpt.put("model.fc1.weight", w);          // any dtype, any device (copied to the host now)
//   ckpt.put_int("step", step);
//   ckpt.save("run/ckpt.bin");                // atomic: the old file survives a crash
//   CheckpointFile back = CheckpointFile::load("run/ckpt.bin");
//   back.get_into("model.fc1.weight", w);     // or back.get(name, Device::cuda(0))
//
// File layout (version 1, little-endian):
// clang-format off
//   header   8-byte magic "\x89GTLCKPT", u32 version, u32 entry count, u64 payload bytes,
//            u32 CRC-32 of the payload, u32 zero                                      (32 bytes)
//   payload  table of contents: per entry u32 name length, name, u8 kind, u8 dtype, u16 ndim,
//            i64 dims[ndim], u64 offset, u64 bytes; then the data of all entries, back to back.
// clang-format on
// Why each part: the magic rejects a file that is not a checkpoint (its first byte has the high
// bit set, as PNG's, so a text file or a 7-bit transfer never looks like one); the version lets a
// later format change refuse old files with a clear message instead of misreading them; the
// payload size detects truncation; the CRC detects corruption.
//
// Why the atomic write: save() writes "<path>.tmp-<pid>", fsyncs it, then renames it over
// <path>. rename() replaces a file atomically, so a reader (or a job restarted after a crash,
// a full disk or a pre-emption mid-save) sees either the old checkpoint or the new one, never a
// half-written file. The pid keeps two processes from writing the same temporary file.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "gtl/tensor/tensor.h"

namespace gtl::io {

class CheckpointFile {
 public:
  static constexpr uint32_t kFormatVersion = 1;

  // Each put replaces an entry of the same name. A tensor is copied to the host when put, so
  // later updates of the original do not change what is saved.
  void put(const std::string& name, const Tensor& tensor);
  void put_int(const std::string& name, int64_t value);
  void put_double(const std::string& name, double value);
  void put_string(const std::string& name, const std::string& value);

  bool has(const std::string& name) const { return entries_.count(name) != 0; }
  std::vector<std::string> names() const;  // sorted

  // A copy of the tensor on `device`.
  Tensor get(const std::string& name, Device device = Device::cpu()) const;
  // Copies the tensor into `dst` (e.g. a model parameter, on any device); shape and dtype must
  // match, and the error names both.
  void get_into(const std::string& name, Tensor& dst) const;
  int64_t get_int(const std::string& name) const;
  double get_double(const std::string& name) const;
  std::string get_string(const std::string& name) const;

  void save(const std::string& path) const;
  static CheckpointFile load(const std::string& path);

 private:
  enum class Kind : uint8_t { Tensor, Int64, Double, String };
  struct Entry {
    Kind kind = Kind::Tensor;
    gtl::Tensor tensor;  // on the host; for scalars, their bytes as a UInt8 tensor
  };
  const Entry& find(const std::string& name, Kind kind) const;
  void put_bytes(const std::string& name, Kind kind, const void* data, std::size_t bytes);

  std::map<std::string, Entry> entries_;  // sorted by name: the same content gives the same file
  std::string source_ = "(in memory)";    // the file it was loaded from, for error messages
};

}  // namespace gtl::io
