// Helpers shared by the optimizer tests: parameters of odd sizes with random values and
// gradients, and conversions between tensors and double vectors for the reference updates.
#pragma once

#include <string>
#include <vector>

#include "gtl/optim/param.h"
#include "gtl/tensor/tensor.h"
#include "gtl_test.h"

namespace gtl::testing {

// The sizes every optimizer test covers: a scalar, an odd size below any vector width, a large one.
inline const std::vector<int64_t> kOddSizes = {1, 7, 1000};

inline std::vector<double> to_double(const Tensor& t) {
  const std::vector<float> f = t.to_vector();
  return std::vector<double>(f.begin(), f.end());
}

inline std::vector<float> to_float(const std::vector<double>& d) {
  return std::vector<float>(d.begin(), d.end());
}

// One parameter per size, values ~ N(0, 1) and zero gradients, in `dtype` on `device`.
inline std::vector<optim::ParamRef> make_params(Generator& gen, DType dtype = DType::Float32,
                                                Device device = Device::cpu(),
                                                const std::vector<int64_t>& sizes = kOddSizes) {
  std::vector<optim::ParamRef> params;
  for (int64_t n : sizes) {
    optim::ParamRef p;
    p.value = Tensor::normal({n}, gen, 0.f, 1.f, dtype, device);
    p.grad = Tensor::zeros({n}, dtype, device);
    p.name.push_back('w');  // not = "w": GCC 12 -O3 raises a false -Wrestrict on it
    p.name += std::to_string(n);
    params.push_back(p);
  }
  return params;
}

// Fresh gradients ~ N(0, scale) for every parameter (the same numbers on every device for the
// same generator state, since the generator is counter-based).
inline void fill_grads(const std::vector<optim::ParamRef>& params, Generator& gen,
                       float scale = 1.f) {
  for (const optim::ParamRef& p : params) {
    Tensor(p.grad).copy_(
        Tensor::normal(p.grad.shape(), gen, 0.f, scale, p.grad.dtype(), p.grad.device()));
  }
}

// Copies of the parameters (values and gradients) on `device`, with the same names.
inline std::vector<optim::ParamRef> copy_params(const std::vector<optim::ParamRef>& params,
                                                Device device) {
  std::vector<optim::ParamRef> out;
  for (const optim::ParamRef& p : params) {
    out.push_back({p.value.to(device), p.grad.to(device),
                   p.compute.defined() ? p.compute.to(device) : Tensor(), p.name});
  }
  return out;
}

// Element-wise equality of the bits, for "continues bitwise identically" checks.
inline void expect_bitwise_equal(const Tensor& actual, const Tensor& expected,
                                 const std::string& what) {
  ASSERT_EQ(actual.nbytes(), expected.nbytes()) << what;
  const Tensor a = actual.to(Device::cpu()), e = expected.to(Device::cpu());
  const auto* pa = static_cast<const unsigned char*>(a.data_ptr());
  const auto* pe = static_cast<const unsigned char*>(e.data_ptr());
  for (std::size_t i = 0; i < a.nbytes(); ++i) {
    if (pa[i] != pe[i]) {
      ADD_FAILURE() << what << ": differs at byte " << i << " (element " << i / a.element_size()
                    << "): got " << a.to_vector()[i / a.element_size()] << ", expected "
                    << e.to_vector()[i / e.element_size()]
                    << "; a resumed run must continue exactly as the uninterrupted one";
      return;
    }
  }
}

}  // namespace gtl::testing
