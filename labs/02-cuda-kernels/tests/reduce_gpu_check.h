// One reduction version on every size of lab02_gpu_cases::reduce_sizes, each at a 16-byte
// aligned address and one float past it, against the exact sum; shared by the GPU tests of TODOs
// 1a and 1b (kernels_test.cpp) and of 1c (reduce_final_test.cpp). Records each sum for the judge
// under the test's name. CUDA builds only.
#pragma once

#include <gtest/gtest.h>

#include <cmath>
#include <string>
#include <utility>
#include <vector>

#include "gtl/tensor/tensor.h"
#include "gtl_judge_output.h"
#include "kernel_gpu_cases.h"
#include "kernels.h"

using GpuReduceFn = void (*)(const float*, float*, int64_t, cudaStream_t);

// The sum of x_gpu by `fn`, into a NaN-filled device float (NaN: never written).
inline float gpu_sum(const gtl::Tensor& x_gpu, GpuReduceFn fn) {
  gtl::Tensor out = gtl::Tensor::full({1}, std::nan(""), gtl::DType::Float32, gtl::Device::cuda(0));
  fn(x_gpu.data<float>(), out.data<float>(), x_gpu.numel(), nullptr);
  return out.item();
}

inline void expect_gpu_reduces_every_size(const char* test, const char* version, GpuReduceFn fn) {
  const gtl::Device gpu = gtl::Device::cuda(0);
  gtl::judge::Outputs recorded(test);
  for (int64_t n : lab02_gpu_cases::reduce_sizes()) {
    const gtl::Tensor x = lab02_gpu_cases::reduce_input(n);
    double exact = 0, magnitude = 0;
    for (float v : x.to_vector()) exact += v, magnitude += std::fabs(v);
    // The same values one float past a 16-byte boundary: float4 loads need a fallback there
    // (on a GPU a misaligned float4 load is an error, "misaligned address").
    std::vector<float> shifted = x.to_vector();
    shifted.insert(shifted.begin(), 0.f);
    const gtl::Tensor shifted_gpu = gtl::Tensor::from_vector(shifted, {n + 1}).to(gpu);
    for (const auto& [xg, offset] : {std::pair{x.to(gpu), 0}, {shifted_gpu.slice(1, n + 1), 1}}) {
      const float got = gpu_sum(xg, fn);
      recorded.record(got);
      // float32 accumulation in any order: error bounded by ~n eps |x|; 1e-5 relative is ample.
      EXPECT_TRUE(std::fabs(got - exact) <= 1e-5 * magnitude + 1e-6)
          << version << ", n = " << n << ", input offset " << offset << " floats: got " << got
          << ", expected " << exact
          << " (NaN: *out never written; 0: nothing was added; far off: elements lost at block "
             "edges, or float4 loads from a misaligned input)";
    }
  }
}
