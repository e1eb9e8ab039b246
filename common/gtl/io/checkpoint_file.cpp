#include "gtl/io/checkpoint_file.h"

#include <fcntl.h>
#include <unistd.h>

#include <bit>
#include <cerrno>
#include <cstring>
#include <fstream>
#include <iterator>

#include "gtl/io/crc32.h"

namespace gtl::io {

static_assert(std::endian::native == std::endian::little,
              "the checkpoint format is little-endian; add byte swapping for this host");

namespace {

constexpr char kMagic[8] = {'\x89', 'G', 'T', 'L', 'C', 'K', 'P', 'T'};
constexpr std::size_t kHeaderBytes = 32;

const char* kind_name(uint8_t kind) {
  static const char* names[] = {"a tensor", "an int64", "a double", "a string"};
  return kind < 4 ? names[kind] : "an unknown kind";
}

[[noreturn]] void fail(const std::string& path, const std::string& message) {
  throw Error("checkpoint '" + path + "': " + message);
}

// Appends plain values to a byte buffer (the header and the table of contents).
struct Writer {
  std::vector<uint8_t> bytes;
  template <typename T>
  void put(T value) {
    const auto* p = reinterpret_cast<const uint8_t*>(&value);
    bytes.insert(bytes.end(), p, p + sizeof(T));
  }
  void put_raw(const void* data, std::size_t n) {
    const auto* p = static_cast<const uint8_t*>(data);
    bytes.insert(bytes.end(), p, p + n);
  }
};

// Reads plain values from a byte range, refusing to read past its end.
struct Reader {
  const std::vector<uint8_t>& bytes;
  std::size_t at;
  const std::string& path;
  template <typename T>
  T get() {
    need(sizeof(T));
    T value;
    std::memcpy(&value, bytes.data() + at, sizeof(T));
    at += sizeof(T);
    return value;
  }
  void need(std::size_t n) const {
    if (n > bytes.size() - at) {
      fail(path, "corrupt table of contents: an entry runs past the end of the file");
    }
  }
};

// The temporary file of an atomic save: removed again unless commit() renamed it into place.
class TempFile {
 public:
  explicit TempFile(const std::string& path)
      : path_(path), tmp_(path + ".tmp-" + std::to_string(::getpid())) {
    fd_ = ::open(tmp_.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
    if (fd_ < 0) error("cannot create the temporary file '" + tmp_ + "'");
  }
  ~TempFile() {
    if (fd_ >= 0) ::close(fd_);
    if (!committed_) ::unlink(tmp_.c_str());
  }
  TempFile(const TempFile&) = delete;
  TempFile& operator=(const TempFile&) = delete;

  void write(const void* data, std::size_t n) {
    const auto* p = static_cast<const uint8_t*>(data);
    while (n > 0) {
      const ssize_t w = ::write(fd_, p, n);
      if (w < 0 && errno == EINTR) continue;
      if (w <= 0) error("writing '" + tmp_ + "' failed");
      p += w;
      n -= static_cast<std::size_t>(w);
    }
  }

  void commit() {
    // fsync before rename: otherwise the rename can reach the disk before the data, and a crash
    // leaves a complete-looking but empty file under the real name.
    if (::fsync(fd_) != 0) error("fsync of '" + tmp_ + "' failed");
    const int fd = fd_;
    fd_ = -1;
    if (::close(fd) != 0) error("closing '" + tmp_ + "' failed");
    if (::rename(tmp_.c_str(), path_.c_str()) != 0) {
      error("renaming '" + tmp_ + "' to '" + path_ + "' failed");
    }
    committed_ = true;
    // Make the rename itself durable. Best effort: the new checkpoint is already in place.
    const std::size_t slash = path_.find_last_of('/');
    const std::string dir = slash == std::string::npos ? "." : path_.substr(0, slash + 1);
    const int dfd = ::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (dfd >= 0) {
      (void)::fsync(dfd);
      ::close(dfd);
    }
  }

 private:
  [[noreturn]] void error(const std::string& what) const {
    fail(path_, "save failed: " + what + ": " + std::strerror(errno) +
                    " (the previous file at this path, if any, is unchanged)");
  }

  std::string path_, tmp_;
  int fd_ = -1;
  bool committed_ = false;
};

}  // namespace

// ---- building and reading entries ---------------------------------------------------------------

void CheckpointFile::put(const std::string& name, const Tensor& tensor) {
  GTL_CHECK(tensor.defined(), "CheckpointFile::put('" << name << "'): undefined tensor");
  entries_[name] = {Kind::Tensor, tensor.is_cuda() ? tensor.to(Device::cpu()) : tensor.clone()};
}

void CheckpointFile::put_bytes(const std::string& name, Kind kind, const void* data,
                               std::size_t bytes) {
  Tensor t = Tensor::empty({static_cast<int64_t>(bytes)}, DType::UInt8);
  if (bytes > 0) std::memcpy(t.data_ptr(), data, bytes);
  entries_[name] = {kind, t};
}

void CheckpointFile::put_int(const std::string& name, int64_t value) {
  put_bytes(name, Kind::Int64, &value, sizeof(value));
}

void CheckpointFile::put_double(const std::string& name, double value) {
  put_bytes(name, Kind::Double, &value, sizeof(value));
}

void CheckpointFile::put_string(const std::string& name, const std::string& value) {
  put_bytes(name, Kind::String, value.data(), value.size());
}

std::vector<std::string> CheckpointFile::names() const {
  std::vector<std::string> out;
  for (const auto& [name, entry] : entries_) out.push_back(name);
  return out;
}

const CheckpointFile::Entry& CheckpointFile::find(const std::string& name, Kind kind) const {
  auto it = entries_.find(name);
  if (it == entries_.end()) {
    std::string present;
    for (const auto& [n, e] : entries_) present += (present.empty() ? "" : ", ") + n;
    fail(source_, "no entry named '" + name +
                      "'; it holds: " + (present.empty() ? std::string("nothing") : present));
  }
  if (it->second.kind != kind) {
    fail(source_, "entry '" + name + "' is " + kind_name(static_cast<uint8_t>(it->second.kind)) +
                      ", not " + kind_name(static_cast<uint8_t>(kind)));
  }
  return it->second;
}

Tensor CheckpointFile::get(const std::string& name, Device device) const {
  const Entry& e = find(name, Kind::Tensor);
  return device.is_cpu() ? e.tensor.clone() : e.tensor.to(device);
}

void CheckpointFile::get_into(const std::string& name, Tensor& dst) const {
  const Entry& e = find(name, Kind::Tensor);
  if (dst.shape() != e.tensor.shape() || dst.dtype() != e.tensor.dtype()) {
    fail(source_, "entry '" + name + "' is " + dtype_name(e.tensor.dtype()) + " " +
                      shape_str(e.tensor.shape()) + " but the destination is " +
                      dtype_name(dst.dtype()) + " " + shape_str(dst.shape()) +
                      " (a different model configuration?)");
  }
  dst.copy_(e.tensor);
}

int64_t CheckpointFile::get_int(const std::string& name) const {
  int64_t v;
  std::memcpy(&v, find(name, Kind::Int64).tensor.data_ptr(), sizeof(v));
  return v;
}

double CheckpointFile::get_double(const std::string& name) const {
  double v;
  std::memcpy(&v, find(name, Kind::Double).tensor.data_ptr(), sizeof(v));
  return v;
}

std::string CheckpointFile::get_string(const std::string& name) const {
  const Tensor& t = find(name, Kind::String).tensor;
  return std::string(static_cast<const char*>(t.data_ptr()), t.nbytes());
}

// ---- the file -----------------------------------------------------------------------------------

void CheckpointFile::save(const std::string& path) const {
  // 1. Table of contents; data offsets count from the end of the table.
  Writer toc;
  uint64_t offset = 0;
  for (const auto& [name, e] : entries_) {
    toc.put(static_cast<uint32_t>(name.size()));
    toc.put_raw(name.data(), name.size());
    toc.put(static_cast<uint8_t>(e.kind));
    toc.put(static_cast<uint8_t>(e.tensor.dtype()));
    toc.put(static_cast<uint16_t>(e.tensor.dim()));
    for (int64_t d : e.tensor.shape()) toc.put(d);
    toc.put(offset);
    toc.put(static_cast<uint64_t>(e.tensor.nbytes()));
    offset += e.tensor.nbytes();
  }
  // 2. The checksum covers the table and the data, in file order.
  uint32_t crc = crc32(toc.bytes.data(), toc.bytes.size());
  for (const auto& [name, e] : entries_) crc = crc32(e.tensor.data_ptr(), e.tensor.nbytes(), crc);

  Writer header;
  header.put_raw(kMagic, sizeof(kMagic));
  header.put(kFormatVersion);
  header.put(static_cast<uint32_t>(entries_.size()));
  header.put(static_cast<uint64_t>(toc.bytes.size() + offset));
  header.put(crc);
  header.put(uint32_t{0});

  // 3. Temporary file, fsync, rename.
  TempFile file(path);
  file.write(header.bytes.data(), header.bytes.size());
  file.write(toc.bytes.data(), toc.bytes.size());
  for (const auto& [name, e] : entries_) file.write(e.tensor.data_ptr(), e.tensor.nbytes());
  file.commit();
}

CheckpointFile CheckpointFile::load(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) fail(path, "cannot open it (missing, or not readable)");
  const std::vector<uint8_t> bytes{std::istreambuf_iterator<char>(in),
                                   std::istreambuf_iterator<char>()};

  // 1. Header: magic, version, sizes, checksum, each refused with its own message.
  const std::size_t magic_seen = std::min(bytes.size(), sizeof(kMagic));
  if (magic_seen > 0 && std::memcmp(bytes.data(), kMagic, magic_seen) != 0) {
    fail(path, "not a GPU Training Labs checkpoint (its first bytes are not the magic number)");
  }
  if (bytes.size() < kHeaderBytes) {
    fail(path, "truncated: expected a " + std::to_string(kHeaderBytes) +
                   "-byte header, the file has " + std::to_string(bytes.size()) + " bytes");
  }
  Reader header{bytes, sizeof(kMagic), path};
  const auto version = header.get<uint32_t>();
  if (version != kFormatVersion) {
    fail(path, "unknown format version " + std::to_string(version) + " (this build reads version " +
                   std::to_string(kFormatVersion) + ")");
  }
  const auto count = header.get<uint32_t>();
  const auto payload = header.get<uint64_t>();
  const auto stored_crc = header.get<uint32_t>();
  const uint64_t found = bytes.size() - kHeaderBytes;
  if (found != payload) {
    fail(path, std::string(found < payload ? "truncated" : "corrupt (trailing bytes)") +
                   ": the header promises " + std::to_string(payload) +
                   " payload bytes, the file has " + std::to_string(found));
  }
  const uint32_t crc = crc32(bytes.data() + kHeaderBytes, payload);
  if (crc != stored_crc) {
    std::ostringstream msg;
    msg << "checksum mismatch: stored CRC-32 0x" << std::hex << stored_crc << ", computed 0x" << crc
        << " (the file is corrupt)";
    fail(path, msg.str());
  }

  // 2. Table of contents, then each entry's data.
  struct Toc {
    std::string name;
    uint8_t kind, dtype;
    Shape shape;
    uint64_t offset, bytes;
  };
  std::vector<Toc> toc;
  Reader r{bytes, kHeaderBytes, path};
  for (uint32_t i = 0; i < count; ++i) {
    Toc t;
    const auto name_len = r.get<uint32_t>();
    r.need(name_len);
    t.name.assign(reinterpret_cast<const char*>(bytes.data() + r.at), name_len);
    r.at += name_len;
    t.kind = r.get<uint8_t>();
    t.dtype = r.get<uint8_t>();
    const auto ndim = r.get<uint16_t>();
    for (uint16_t d = 0; d < ndim; ++d) t.shape.push_back(r.get<int64_t>());
    t.offset = r.get<uint64_t>();
    t.bytes = r.get<uint64_t>();
    if (t.kind > static_cast<uint8_t>(Kind::String) ||
        t.dtype > static_cast<uint8_t>(DType::UInt8)) {
      fail(path, "entry '" + t.name + "' has an unknown kind or dtype");
    }
    toc.push_back(std::move(t));
  }
  const std::size_t data_start = r.at;
  CheckpointFile ckpt;
  ckpt.source_ = path;
  for (const Toc& t : toc) {
    const auto dtype = static_cast<DType>(t.dtype);
    for (int64_t d : t.shape) {
      if (d < 0) fail(path, "entry '" + t.name + "' has a negative dimension");
    }
    if (t.bytes != static_cast<uint64_t>(shape_numel(t.shape)) * dtype_size(dtype) ||
        t.offset > bytes.size() - data_start || t.bytes > bytes.size() - data_start - t.offset) {
      fail(path, "entry '" + t.name + "': its size or offset does not fit the file");
    }
    Tensor tensor = Tensor::empty(t.shape, dtype);
    if (t.bytes > 0) std::memcpy(tensor.data_ptr(), bytes.data() + data_start + t.offset, t.bytes);
    ckpt.entries_[t.name] = {static_cast<Kind>(t.kind), tensor};
  }
  return ckpt;
}

}  // namespace gtl::io
