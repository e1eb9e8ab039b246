// The occupancy calculator (gtl/runtime/occupancy.h) against the CUDA runtime's own
// (cudaOccupancyMaxActiveBlocksPerMultiprocessor) on this GPU, for two kernels (few and many
// registers) over block sizes and dynamic shared memory, with the carveout at its largest and
// the opt-in shared-memory size set. Skipped, with the reason, without a GPU.
#include <gtest/gtest.h>

#include <string>

#include "gtl/runtime/cuda_check.h"
#include "gtl/runtime/device.h"
#include "gtl/runtime/occupancy.h"
#include "gtl_test.h"

namespace gtl {
namespace {

__global__ void few_registers(float* out, int n) {
  extern __shared__ float tile[];
  const int i = blockIdx.x * blockDim.x + threadIdx.x;
  tile[threadIdx.x] = i < n ? out[i] : 0.f;
  __syncthreads();
  if (i < n) out[i] = tile[blockDim.x - 1 - threadIdx.x];
}

// Sixty-four values live at once through an unrolled loop: many registers a thread.
__global__ void many_registers(float* out, int n) {
  extern __shared__ float tile[];
  const int i = blockIdx.x * blockDim.x + threadIdx.x;
  float v[64];
#pragma unroll
  for (int k = 0; k < 64; ++k) v[k] = i < n ? out[(i + k * 977) % n] : 0.f;
  float acc = 0.f;
#pragma unroll
  for (int k = 0; k < 64; ++k) acc += v[k] * v[63 - k];
  tile[threadIdx.x] = acc;
  __syncthreads();
  if (i < n) out[i] = tile[blockDim.x - 1 - threadIdx.x];
}

template <typename Kernel>
void expect_cudas_figures(Kernel kernel, const char* name) {
  const SmLimits sm = SmLimits::of_device(0);
  cudaFuncAttributes attr{};
  GTL_CUDA_CHECK(cudaFuncGetAttributes(&attr, kernel));
  const int max_dynamic =
      static_cast<int>(sm.max_shared_per_block) - static_cast<int>(attr.sharedSizeBytes);
  GTL_CUDA_CHECK(
      cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, max_dynamic));
  GTL_CUDA_CHECK(cudaFuncSetAttribute(kernel, cudaFuncAttributePreferredSharedMemoryCarveout, 100));
  for (int threads : {32, 96, 128, 256, 512, 1024})
    for (int dynamic : {0, 4096, 48 * 1024, 100 * 1024}) {
      const int shared = dynamic + threads * static_cast<int>(sizeof(float));  // tile[threads]
      if (shared > max_dynamic) continue;
      int blocks = -1;
      GTL_CUDA_CHECK(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&blocks, kernel, threads,
                                                                   static_cast<size_t>(shared)));
      const Occupancy o = theoretical_occupancy(
          {threads, attr.numRegs, static_cast<int64_t>(attr.sharedSizeBytes) + shared}, sm);
      EXPECT_EQ(o.blocks_per_sm, blocks)
          << name << " (" << attr.numRegs << " registers), " << threads << " threads, " << shared
          << " bytes of dynamic shared memory on " << sm.arch << ": ours limited by "
          << occupancy_limit_name(o.limited_by);
    }
}

TEST(OccupancyGpu, TheCalculatorAgreesWithCudas) {
  GTL_REQUIRE_GPU();
  expect_cudas_figures(few_registers, "few_registers");
  expect_cudas_figures(many_registers, "many_registers");
}

}  // namespace
}  // namespace gtl
