// CUDA kernels of ops::embedding: a gather forward, an owner-computes backward with no atomics
// (see embedding.h for why).
#include "gtl/ops/detail/dispatch.h"
#include "gtl/ops/detail/embedding_cuda.h"
#include "gtl/runtime/cuda_check.h"
#include "gtl/runtime/launch.h"
#include "gtl/tensor/dispatch.h"

namespace gtl::ops::cuda {

namespace {

// One thread per output element rows[i, c].
template <typename W, typename L>
__global__ void embedding_forward(const W* table, const L* ids, float* rows, int64_t n, int64_t d,
                                  int64_t vocab) {
  const int64_t e = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x;
  if (e >= n * d) return;
  const auto v = static_cast<int64_t>(ids[e / d]);
  rows[e] = v >= 0 && v < vocab ? convert<float>(table[v * d + e % d])
                                : __int_as_float(0x7fc00000);  // NaN
}

// One thread owns dtable[v, c]: it adds drows[i, c] for every i with ids[i] == v, in order i =
// 0..n-1 (the CPU's order), so the sum is the same on every run and equal to the CPU's.
template <typename L>
__global__ void embedding_backward_kernel(const float* drows, const L* ids, float* dtable,
                                          int64_t n, int64_t d, int64_t vocab) {
  const int64_t e = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x;
  if (e >= vocab * d) return;
  const int64_t v = e / d, c = e % d;
  float sum = 0.f;
  for (int64_t i = 0; i < n; ++i) {
    if (static_cast<int64_t>(ids[i]) == v) sum += drows[i * d + c];
  }
  dtable[e] = sum;
}

}  // namespace

void embedding(const Tensor& table, const Tensor& ids, const Tensor& rows) {
  DeviceGuard guard(table.device());
  cudaStream_t stream = current_stream().handle();
  const int64_t n = rows.size(0), d = rows.size(1), total = n * d;
  GTL_DISPATCH_FLOATING(table.dtype(), W, {
    GTL_DISPATCH_LABELS(ids.dtype(), L, {
      embedding_forward<W, L>
          <<<launch::blocks_to_cover(total), launch::kThreadsPerBlock, 0, stream>>>(
              table.data<W>(), ids.data<L>(), rows.data<float>(), n, d, table.size(0));
    });
  });
  GTL_CUDA_CHECK_LAUNCH();
}

void embedding_backward(const Tensor& drows, const Tensor& ids, const Tensor& dtable) {
  DeviceGuard guard(drows.device());
  cudaStream_t stream = current_stream().handle();
  const int64_t vocab = dtable.size(0), d = dtable.size(1);
  GTL_DISPATCH_LABELS(ids.dtype(), L, {
    embedding_backward_kernel<L>
        <<<launch::blocks_to_cover(vocab * d), launch::kThreadsPerBlock, 0, stream>>>(
            drows.data<float>(), ids.data<L>(), dtable.data<float>(), ids.size(0), d, vocab);
  });
  GTL_CUDA_CHECK_LAUNCH();
}

}  // namespace gtl::ops::cuda
