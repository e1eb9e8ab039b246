// Tensor: an n-dimensional array of one dtype on one device.
//
// A tensor is a view: shape + dtype + an offset into a Storage (the bytes, owned by the
// allocator they came from). Views (reshape, slice along the first dimension) share storage
// and copy nothing; clone() copies. Tensors are always contiguous (row-major strides), which
// keeps every kernel in the course simple to read.
//
// Copying a Tensor object is cheap and shares the data, like a shared_ptr:
//   Tensor a = Tensor::zeros({2, 3});   Tensor b = a;   // b and a are the same data
//
// Mixing devices in one operation is an error that names both devices.
#pragma once

#include <cstdint>
#include <initializer_list>
#include <memory>
#include <ostream>
#include <string>
#include <vector>

#include "gtl/memory/allocator.h"
#include "gtl/runtime/device.h"
#include "gtl/runtime/error.h"
#include "gtl/runtime/stream.h"
#include "gtl/tensor/dtype.h"

namespace gtl {

using Shape = std::vector<int64_t>;
std::string shape_str(const Shape& shape);  // "[2, 3]"
int64_t shape_numel(const Shape& shape);

// Bytes from an allocator; returns them to it when the last tensor viewing them goes away.
//
// release() / allocate() are PyTorch FSDP's `storage().resize_(0)` and `resize_(n)`: the bytes go
// back to the allocator while this object, and every tensor viewing it, stays. The model's
// parameters are views into a flat buffer (nn/flat_parameter.h); freeing the buffer's bytes
// between uses and re-allocating them later needs no re-pointing of any layer, because a tensor
// reads data() at each use rather than caching the pointer. Using a view of a released storage
// throws an Error that says so, instead of reading freed memory.
class Storage {
 public:
  Storage(std::size_t bytes, std::shared_ptr<Allocator> allocator, const Stream& stream);
  ~Storage();
  Storage(const Storage&) = delete;
  Storage& operator=(const Storage&) = delete;

  // Throws when released (one predictable branch; the message is built out of line).
  void* data() const {
    if (released_) throw_released();
    return data_;
  }
  std::size_t nbytes() const { return bytes_; }  // 0 while released
  Device device() const { return allocator_->device(); }
  Allocator& allocator() const { return *allocator_; }
  const Stream& stream() const { return stream_; }  // the stream the bytes were allocated on

  // Returns the bytes to the allocator now, exactly as the destructor would (on a GPU the
  // caching allocator reuses them only after the work already queued on their streams), and
  // marks the storage released: data() throws, nbytes() is 0. A no-op when already released.
  void release();
  // Takes `bytes` new bytes from the same allocator, for the same stream; contents are
  // unspecified. Only on a released storage. Views made earlier see the new bytes.
  void allocate(std::size_t bytes);
  bool released() const { return released_; }

 private:
  [[noreturn]] void throw_released() const;

  void* data_ = nullptr;
  std::size_t bytes_ = 0;
  std::size_t released_bytes_ = 0;  // what release() gave back (for the error message)
  bool released_ = false;
  std::shared_ptr<Allocator> allocator_;
  Stream stream_;
};

// Counter-based random numbers (Philox-4x32-10): element i of a tensor depends only on
// (seed, offset + i), so the CPU and the GPU produce the same numbers for the same seed.
// A Generator hands out consecutive offsets so that successive draws differ.
class Generator {
 public:
  explicit Generator(uint64_t seed = 0) : seed_(seed) {}
  uint64_t seed() const { return seed_; }
  uint64_t offset() const { return offset_; }
  void set_offset(uint64_t offset) { offset_ = offset; }
  // Reserves `n` counters and returns the first.
  uint64_t advance(uint64_t n) {
    uint64_t first = offset_;
    offset_ += n;
    return first;
  }

 private:
  uint64_t seed_;
  uint64_t offset_ = 0;
};

class Tensor {
 public:
  Tensor() = default;  // undefined: holds nothing (defined() == false)

  // ---- creation -------------------------------------------------------------------------------
  static Tensor empty(const Shape& shape, DType dtype = DType::Float32,
                      Device device = Device::cpu());
  static Tensor zeros(const Shape& shape, DType dtype = DType::Float32,
                      Device device = Device::cpu());
  static Tensor ones(const Shape& shape, DType dtype = DType::Float32,
                     Device device = Device::cpu());
  static Tensor full(const Shape& shape, double value, DType dtype = DType::Float32,
                     Device device = Device::cpu());
  // 0, 1, ..., n-1
  static Tensor arange(int64_t n, DType dtype = DType::Float32, Device device = Device::cpu());
  // Uniform in [low, high) and normal(mean, std), computed in float32 then cast to dtype.
  static Tensor uniform(const Shape& shape, Generator& gen, float low = 0.f, float high = 1.f,
                        DType dtype = DType::Float32, Device device = Device::cpu());
  static Tensor normal(const Shape& shape, Generator& gen, float mean = 0.f, float std = 1.f,
                       DType dtype = DType::Float32, Device device = Device::cpu());
  // A CPU tensor holding `values` (tests and small examples).
  static Tensor from_vector(const std::vector<float>& values, const Shape& shape,
                            DType dtype = DType::Float32);
  // Allocates from `allocator` instead of the current one (pinned staging buffers).
  static Tensor empty_with(const Shape& shape, DType dtype, std::shared_ptr<Allocator> allocator,
                           const Stream& stream = Stream());

  // ---- properties -----------------------------------------------------------------------------
  bool defined() const { return storage_ != nullptr; }
  const Shape& shape() const { return shape_; }
  int64_t dim() const { return static_cast<int64_t>(shape_.size()); }
  int64_t size(int64_t d) const;  // negative d counts from the end
  int64_t numel() const { return numel_; }
  Shape strides() const;  // in elements, row-major
  DType dtype() const { return dtype_; }
  Device device() const;
  bool is_cuda() const { return device().is_cuda(); }
  std::size_t element_size() const { return dtype_size(dtype_); }
  std::size_t nbytes() const { return static_cast<std::size_t>(numel_) * element_size(); }
  const std::shared_ptr<Storage>& storage() const { return storage_; }
  std::size_t storage_offset_bytes() const { return offset_; }

  void* data_ptr() const;
  // Typed pointer; throws if T does not match dtype().
  template <typename T>
  T* data() const {
    GTL_CHECK(dtype_of<T>::value == dtype_, "Tensor::data<" << dtype_name(dtype_of<T>::value)
                                                            << ">() on a " << dtype_name(dtype_)
                                                            << " tensor");
    return static_cast<T*>(data_ptr());
  }

  // ---- views (share storage, copy nothing) ----------------------------------------------------
  // Same data, new shape with the same numel; one dimension may be -1 (inferred).
  Tensor reshape(const Shape& shape) const;
  Tensor flatten() const { return reshape({numel_}); }
  // Rows [start, end) along the first dimension.
  Tensor slice(int64_t start, int64_t end) const;
  // Row i along the first dimension, with that dimension removed.
  Tensor select(int64_t i) const;

  // ---- copies and conversions -----------------------------------------------------------------
  // A copy on `device` (synchronous: the result is ready when this returns).
  Tensor to(Device device) const;
  // A copy converted to `dtype` on the same device (fp16/bf16 round to nearest even).
  Tensor to(DType dtype) const;
  Tensor clone() const;
  // Copies src into this tensor (same shape and dtype, any devices). Synchronous.
  void copy_(const Tensor& src);
  // Enqueues the copy on `stream` and returns at once: between two device tensors, and between
  // the GPU and pinned host memory. From or to pageable host memory the driver stages it and the
  // host waits.
  void copy_async_(const Tensor& src, const Stream& stream);
  void fill_(double value);
  void zero_() { fill_(0.0); }

  // Values as floats on the host (copies from the GPU if needed): tests and printing.
  std::vector<float> to_vector() const;
  // The single value of a one-element tensor, as float.
  float item() const;

  // "Tensor(float32, cuda:0, [2, 3]) [0.1, 0.2, ...]"
  std::string str(int64_t max_values = 6) const;

 private:
  Tensor(std::shared_ptr<Storage> storage, std::size_t offset, Shape shape, DType dtype);

  std::shared_ptr<Storage> storage_;
  std::size_t offset_ = 0;  // bytes into storage
  Shape shape_;
  int64_t numel_ = 0;
  DType dtype_ = DType::Float32;
};

std::ostream& operator<<(std::ostream& os, const Tensor& t);

// Throws "op: tensors on different devices: cpu and cuda:0" unless all share one device.
void check_same_device(const char* op, std::initializer_list<const Tensor*> tensors);
// Throws "op: expected shape [..], got [..]" / "op: expected dtype .., got ..".
void check_shape(const char* op, const Tensor& t, const Shape& expected);
void check_dtype(const char* op, const Tensor& t, DType expected);

}  // namespace gtl
