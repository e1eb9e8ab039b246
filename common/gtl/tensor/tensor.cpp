#include "gtl/tensor/tensor.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <iomanip>
#include <sstream>

#include "gtl/tensor/dispatch.h"
#include "gtl/tensor/philox.h"

#ifdef GTL_WITH_CUDA
#include "gtl/runtime/cuda_check.h"
#include "gtl/tensor/detail/tensor_kernels_cuda.h"
#endif

namespace gtl {

// ---- shapes -------------------------------------------------------------------------------------

std::string shape_str(const Shape& shape) {
  std::string s = "[";
  for (std::size_t i = 0; i < shape.size(); ++i) s += (i ? ", " : "") + std::to_string(shape[i]);
  return s + "]";
}

int64_t shape_numel(const Shape& shape) {
  int64_t n = 1;
  for (int64_t d : shape) {
    GTL_CHECK(d >= 0, "negative dimension in shape " << shape_str(shape));
    n *= d;
  }
  return n;
}

// ---- storage ------------------------------------------------------------------------------------

Storage::Storage(std::size_t bytes, std::shared_ptr<Allocator> allocator, const Stream& stream)
    : bytes_(bytes), allocator_(std::move(allocator)), stream_(stream) {
  data_ = allocator_->allocate(bytes, stream_);
}

// A destructor must not throw: it may run while an exception (often the CUDA error that broke
// the context and makes this free fail too) is already unwinding the stack, and a second one
// would end the program. So the failure is reported and the memory given up for lost.
Storage::~Storage() {
  try {
    allocator_->deallocate(data_);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "gtl: freeing a %zu-byte tensor storage failed: %s\n", bytes_, e.what());
  }
}

// The same free as the destructor's, so a GPU block is reused only after its streams' work. If
// deallocate throws, the storage keeps its bytes and stays usable (nothing was freed).
void Storage::release() {
  if (released_) return;
  allocator_->deallocate(data_);
  released_bytes_ = bytes_;
  data_ = nullptr;
  bytes_ = 0;
  released_ = true;
}

void Storage::allocate(std::size_t bytes) {
  GTL_CHECK(released_, "Storage::allocate: the storage still holds "
                           << format_bytes(static_cast<int64_t>(bytes_))
                           << "; release() it first (a live storage is never re-allocated under "
                              "the tensors that view it)");
  data_ = allocator_->allocate(bytes, stream_);  // may throw OutOfMemoryError: still released
  bytes_ = bytes;
  released_ = false;
}

void Storage::throw_released() const {
  throw Error("tensor storage of " + format_bytes(static_cast<int64_t>(released_bytes_)) + " on " +
              device().str() +
              " was released (FSDP freed it): its bytes went back to the allocator. Materialise "
              "it again (e.g. FlatParameter::materialize_values()) before using any view of it");
}

// ---- construction -------------------------------------------------------------------------------

Tensor::Tensor(std::shared_ptr<Storage> storage, std::size_t offset, Shape shape, DType dtype)
    : storage_(std::move(storage)),
      offset_(offset),
      shape_(std::move(shape)),
      numel_(shape_numel(shape_)),
      dtype_(dtype) {}

Tensor Tensor::empty_with(const Shape& shape, DType dtype, std::shared_ptr<Allocator> allocator,
                          const Stream& stream) {
  const auto bytes = static_cast<std::size_t>(shape_numel(shape)) * dtype_size(dtype);
  auto storage = std::make_shared<Storage>(bytes, std::move(allocator), stream);
  return Tensor(std::move(storage), 0, shape, dtype);
}

Tensor Tensor::empty(const Shape& shape, DType dtype, Device device) {
  return empty_with(shape, dtype, current_allocator(device), current_stream());
}

Tensor Tensor::zeros(const Shape& shape, DType dtype, Device device) {
  return full(shape, 0.0, dtype, device);
}

Tensor Tensor::ones(const Shape& shape, DType dtype, Device device) {
  return full(shape, 1.0, dtype, device);
}

Tensor Tensor::full(const Shape& shape, double value, DType dtype, Device device) {
  Tensor t = empty(shape, dtype, device);
  t.fill_(value);
  return t;
}

Tensor Tensor::arange(int64_t n, DType dtype, Device device) {
  Tensor t = empty({n}, dtype, device);
  if (device.is_cuda()) {
#ifdef GTL_WITH_CUDA
    DeviceGuard guard(device);
    tensor_kernels::arange(t.data_ptr(), dtype, n, current_stream().handle());
#endif
    return t;
  }
  GTL_DISPATCH_ALL(dtype, T, {
    T* p = t.data<T>();
    for (int64_t i = 0; i < n; ++i) p[i] = convert<T>(i);
  });
  return t;
}

Tensor Tensor::uniform(const Shape& shape, Generator& gen, float low, float high, DType dtype,
                       Device device) {
  Tensor t = empty(shape, dtype, device);
  const uint64_t offset = gen.advance(static_cast<uint64_t>(t.numel()));
  if (device.is_cuda()) {
#ifdef GTL_WITH_CUDA
    DeviceGuard guard(device);
    tensor_kernels::uniform(t.data_ptr(), dtype, t.numel(), gen.seed(), offset, low, high,
                            current_stream().handle());
#endif
    return t;
  }
  GTL_DISPATCH_FLOATING(dtype, T, {
    T* p = t.data<T>();
    for (int64_t i = 0; i < t.numel(); ++i) {
      p[i] = convert<T>(philox::to_range(philox::uniform(gen.seed(), offset + i), low, high));
    }
  });
  return t;
}

Tensor Tensor::normal(const Shape& shape, Generator& gen, float mean, float std, DType dtype,
                      Device device) {
  Tensor t = empty(shape, dtype, device);
  // Normals consume counters in pairs (Box-Muller), so reserve an even number.
  const uint64_t offset = gen.advance((static_cast<uint64_t>(t.numel()) + 1) & ~uint64_t{1});
  if (device.is_cuda()) {
#ifdef GTL_WITH_CUDA
    DeviceGuard guard(device);
    tensor_kernels::normal(t.data_ptr(), dtype, t.numel(), gen.seed(), offset, mean, std,
                           current_stream().handle());
#endif
    return t;
  }
  GTL_DISPATCH_FLOATING(dtype, T, {
    T* p = t.data<T>();
    for (int64_t i = 0; i < t.numel(); ++i) {
      p[i] = convert<T>(mean + std * philox::normal(gen.seed(), offset + i));
    }
  });
  return t;
}

Tensor Tensor::from_vector(const std::vector<float>& values, const Shape& shape, DType dtype) {
  GTL_CHECK(static_cast<int64_t>(values.size()) == shape_numel(shape),
            "from_vector: " << values.size() << " values do not fill shape " << shape_str(shape));
  Tensor t = empty(shape, dtype, Device::cpu());
  GTL_DISPATCH_ALL(dtype, T, {
    T* p = t.data<T>();
    for (std::size_t i = 0; i < values.size(); ++i) p[i] = convert<T>(values[i]);
  });
  return t;
}

// ---- properties ---------------------------------------------------------------------------------

int64_t Tensor::size(int64_t d) const {
  const int64_t n = dim();
  GTL_CHECK(d >= -n && d < n, "size(" << d << ") out of range for a " << n << "-d tensor");
  return shape_[d < 0 ? d + n : d];
}

Shape Tensor::strides() const {
  Shape s(shape_.size(), 1);
  for (int64_t i = dim() - 2; i >= 0; --i) s[i] = s[i + 1] * shape_[i + 1];
  return s;
}

Device Tensor::device() const {
  return storage_ ? storage_->device() : Device::cpu();
}

void* Tensor::data_ptr() const {
  GTL_CHECK(defined(), "data_ptr() on an undefined tensor");
  char* base = static_cast<char*>(storage_->data());  // throws if the storage was released
  // A storage re-allocated smaller than before would leave this view hanging past its end.
  GTL_CHECK(offset_ + nbytes() <= storage_->nbytes(),
            "a view of " << nbytes() << " bytes at byte " << offset_
                         << " does not fit its storage's " << storage_->nbytes()
                         << " bytes (re-allocated smaller?)");
  return base + offset_;
}

// ---- views --------------------------------------------------------------------------------------

Tensor Tensor::reshape(const Shape& shape) const {
  Shape out = shape;
  int64_t known = 1, infer = -1;
  for (std::size_t i = 0; i < out.size(); ++i) {
    if (out[i] == -1) {
      GTL_CHECK(infer < 0, "reshape: more than one -1 in " << shape_str(shape));
      infer = static_cast<int64_t>(i);
    } else {
      known *= out[i];
    }
  }
  if (infer >= 0) {
    GTL_CHECK(known > 0 && numel_ % known == 0, "reshape: cannot infer -1 in " << shape_str(shape)
                                                                               << " for " << numel_
                                                                               << " elements");
    out[infer] = numel_ / known;
  }
  GTL_CHECK(shape_numel(out) == numel_,
            "reshape: shape " << shape_str(shape) << " holds " << shape_numel(out)
                              << " elements, tensor " << shape_str(shape_) << " has " << numel_);
  return Tensor(storage_, offset_, out, dtype_);
}

Tensor Tensor::slice(int64_t start, int64_t end) const {
  GTL_CHECK(dim() >= 1, "slice on a 0-d tensor");
  GTL_CHECK(0 <= start && start <= end && end <= shape_[0],
            "slice(" << start << ", " << end << ") out of range for first dimension " << shape_[0]);
  Shape out = shape_;
  out[0] = end - start;
  const int64_t row = shape_[0] ? numel_ / shape_[0] : 0;
  return Tensor(storage_, offset_ + static_cast<std::size_t>(start * row) * element_size(), out,
                dtype_);
}

Tensor Tensor::select(int64_t i) const {
  Tensor row = slice(i, i + 1);
  return row.reshape(Shape(shape_.begin() + 1, shape_.end()));
}

// ---- copies and conversions ---------------------------------------------------------------------

namespace {

void check_copy(const Tensor& dst, const Tensor& src) {
  GTL_CHECK(dst.defined() && src.defined(), "copy_: undefined tensor");
  GTL_CHECK(dst.shape() == src.shape(), "copy_: shapes differ: destination "
                                            << shape_str(dst.shape()) << ", source "
                                            << shape_str(src.shape()));
  GTL_CHECK(dst.dtype() == src.dtype(), "copy_: dtypes differ: destination "
                                            << dtype_name(dst.dtype()) << ", source "
                                            << dtype_name(src.dtype())
                                            << " (convert with .to(dtype) first)");
}

}  // namespace

void Tensor::copy_async_(const Tensor& src, const Stream& stream) {
  check_copy(*this, src);
  if (nbytes() == 0) return;
  if (!is_cuda() && !src.is_cuda()) {
    std::memcpy(data_ptr(), src.data_ptr(), nbytes());
    return;
  }
#ifdef GTL_WITH_CUDA
  // Unified virtual addressing lets the driver infer the direction from the pointers.
  GTL_CUDA_CHECK(
      cudaMemcpyAsync(data_ptr(), src.data_ptr(), nbytes(), cudaMemcpyDefault, stream.handle()));
#else
  throw Error("copy between " + src.device().str() + " and " + device().str() + ": " +
              cuda_unavailable_reason());
#endif
}

void Tensor::copy_(const Tensor& src) {
  const Stream stream = current_stream();
  copy_async_(src, stream);
  if (is_cuda() || src.is_cuda()) stream.synchronize();
}

Tensor Tensor::to(Device device) const {
  Tensor out = empty(shape_, dtype_, device);
  out.copy_(*this);
  return out;
}

Tensor Tensor::to(DType dtype) const {
  Tensor out = empty(shape_, dtype, device());
  if (is_cuda()) {
#ifdef GTL_WITH_CUDA
    DeviceGuard guard(device());
    tensor_kernels::cast(data_ptr(), dtype_, out.data_ptr(), dtype, numel_,
                         current_stream().handle());
#endif
    return out;
  }
  GTL_DISPATCH_ALL(dtype_, S, {
    const S* s = data<S>();
    GTL_DISPATCH_ALL(dtype, D, {
      D* d = out.data<D>();
      for (int64_t i = 0; i < numel_; ++i) d[i] = convert<D>(s[i]);
    });
  });
  return out;
}

Tensor Tensor::clone() const {
  return to(device());
}

void Tensor::fill_(double value) {
  if (numel_ == 0) return;
  if (is_cuda()) {
#ifdef GTL_WITH_CUDA
    DeviceGuard guard(device());
    tensor_kernels::fill(data_ptr(), dtype_, numel_, value, current_stream().handle());
#endif
    return;
  }
  GTL_DISPATCH_ALL(dtype_, T, { std::fill_n(data<T>(), numel_, convert<T>(value)); });
}

std::vector<float> Tensor::to_vector() const {
  const Tensor host = is_cuda() ? to(Device::cpu()) : *this;
  std::vector<float> out(static_cast<std::size_t>(numel_));
  GTL_DISPATCH_ALL(dtype_, T, {
    const T* p = host.data<T>();
    for (int64_t i = 0; i < numel_; ++i) out[i] = convert<float>(p[i]);
  });
  return out;
}

float Tensor::item() const {
  GTL_CHECK(numel_ == 1, "item() on a tensor of " << numel_ << " elements (expected 1)");
  return to_vector()[0];
}

std::string Tensor::str(int64_t max_values) const {
  if (!defined()) return "Tensor(undefined)";
  std::ostringstream os;
  os << "Tensor(" << dtype_name(dtype_) << ", " << device() << ", " << shape_str(shape_) << ")";
  if (storage_->released()) return os.str() + " <released>";
  if (numel_ == 0) return os.str();
  // Only the first values are copied off the GPU, so printing a huge tensor stays cheap.
  const int64_t shown = std::min(numel_, max_values);
  const std::vector<float> values = flatten().slice(0, shown).to_vector();
  os << " [" << std::setprecision(4);
  for (int64_t i = 0; i < shown; ++i) os << (i ? ", " : "") << values[i];
  os << (shown < numel_ ? ", ...]" : "]");
  return os.str();
}

std::ostream& operator<<(std::ostream& os, const Tensor& t) {
  return os << t.str();
}

// ---- argument checks ----------------------------------------------------------------------------

void check_same_device(const char* op, std::initializer_list<const Tensor*> tensors) {
  const Tensor* first = nullptr;
  for (const Tensor* t : tensors) {
    GTL_CHECK(t->defined(), op << ": undefined tensor argument");
    if (!first) {
      first = t;
    } else {
      GTL_CHECK(t->device() == first->device(),
                op << ": tensors on different devices: " << first->device() << " and "
                   << t->device() << " (move one with .to(device))");
    }
  }
}

void check_shape(const char* op, const Tensor& t, const Shape& expected) {
  GTL_CHECK(t.shape() == expected,
            op << ": expected shape " << shape_str(expected) << ", got " << shape_str(t.shape()));
}

void check_dtype(const char* op, const Tensor& t, DType expected) {
  GTL_CHECK(t.dtype() == expected,
            op << ": expected dtype " << dtype_name(expected) << ", got " << dtype_name(t.dtype()));
}

}  // namespace gtl
