// Lab 10, TODO 3: FlashAttention's backward pass, by recomputation.
//
// With P_ij = exp(S_ij - lse_i) rebuilt from the forward's lse, the gradients are
//   dV_j = sum_i P_ij dO_i          dP_ij = dO_i . v_j
//   dS_ij = P_ij (dP_ij - sum_l P_il dP_il)   (softmax's backward)
//   dQ_i = sum_j dS_ij k_j / sqrt(d)   dK_j = sum_i dS_ij q_i / sqrt(d)
// Every sum over j runs along a query's row, every sum over i down a key's column, and the
// result must not depend on the order in which the GPU happens to run the blocks.
#include <cmath>

#include "attention.h"
#include "warp_reduce.cuh"

namespace lab10 {

namespace {

// SOLUTION(lab10) step 3
// A kernel that walks one direction (a block per query tile) would add into the other from many
// blocks at once: atomics, whose order, and so whose rounding, changes from run to run. This one
// pays for a second walk instead: one kernel per direction, each owning its outputs.
constexpr int kWarps = 8;  // rows (queries or keys) per block, one warp each
constexpr int kTile = 32;  // the other side's rows per tile, one per lane

// A block per kWarps query rows, walking the key tiles: dQ, and the row's sum_l P_il dP_il, which
// equals dO_i . o_i (o_i = sum_l P_il v_l), into row_scratch for the second kernel.
template <int D>
__global__ void dq_kernel(const float* q, const float* k, const float* v, const float* o,
                          const float* dout, const float* lse, float* row_scratch, float* dq,
                          AttentionShape s, float scale) {
  constexpr int kPerLane = D / 32;
  __shared__ float k_tile[kTile][D + 1];
  __shared__ float v_tile[kTile][D + 1];
  __shared__ float q_rows[kWarps][D];
  __shared__ float do_rows[kWarps][D];
  __shared__ float ds_rows[kWarps][kTile];
  const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
  const int first_row = blockIdx.x * kWarps;
  const int i = first_row + warp;
  const bool active = i < s.t;
  const size_t head = size_t(blockIdx.y) * s.t;

  float delta = 0.f;
  for (int c = lane; c < D; c += 32) {
    q_rows[warp][c] = active ? q[(head + i) * D + c] : 0.f;
    do_rows[warp][c] = active ? dout[(head + i) * D + c] : 0.f;
    delta += active ? do_rows[warp][c] * o[(head + i) * D + c] : 0.f;
  }
  delta = warp_sum(delta);
  if (active && lane == 0) row_scratch[head + i] = delta;
  const float lse_i = active ? lse[head + i] : 0.f;
  float acc[kPerLane] = {};
  const int last_row = min(first_row + kWarps, s.t) - 1;
  const int key_end = s.causal ? last_row + 1 : s.t;
  for (int start = 0; start < key_end; start += kTile) {
    __syncthreads();
    for (int e = threadIdx.x; e < kTile * D; e += blockDim.x) {
      const int r = e / D, c = e % D, j = start + r;
      k_tile[r][c] = j < s.t ? k[(head + j) * D + c] : 0.f;
      v_tile[r][c] = j < s.t ? v[(head + j) * D + c] : 0.f;
    }
    __syncthreads();
    const int j = start + lane;
    float ds = 0.f;
    if (active && j < s.t && !(s.causal && j > i)) {
      float qk = 0.f, dp = 0.f;
      for (int c = 0; c < D; ++c) {
        qk += q_rows[warp][c] * k_tile[lane][c];
        dp += do_rows[warp][c] * v_tile[lane][c];
      }
      ds = expf(qk * scale - lse_i) * (dp - delta);
    }
    ds_rows[warp][lane] = ds;
    __syncwarp();
    for (int c = 0; c < kPerLane; ++c)
      for (int r = 0; r < kTile; ++r) acc[c] += ds_rows[warp][r] * k_tile[r][lane + 32 * c];
    __syncwarp();  // the row is read before the next tile's ds overwrites it
  }
  if (!active) return;
  for (int c = 0; c < kPerLane; ++c) dq[(head + i) * D + lane + 32 * c] = acc[c] * scale;
}

// A block per kWarps key rows, walking the query tiles that see them: dK and dV.
template <int D>
__global__ void dkdv_kernel(const float* q, const float* k, const float* v, const float* dout,
                            const float* lse, const float* row_scratch, float* dk, float* dv,
                            AttentionShape s, float scale) {
  constexpr int kPerLane = D / 32;
  __shared__ float q_tile[kTile][D + 1];
  __shared__ float do_tile[kTile][D + 1];
  __shared__ float k_rows[kWarps][D];
  __shared__ float v_rows[kWarps][D];
  __shared__ float p_rows[kWarps][kTile];
  __shared__ float ds_rows[kWarps][kTile];
  const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
  const int first_key = blockIdx.x * kWarps;
  const int j = first_key + warp;
  const bool active = j < s.t;
  const size_t head = size_t(blockIdx.y) * s.t;

  for (int c = lane; c < D; c += 32) {
    k_rows[warp][c] = active ? k[(head + j) * D + c] : 0.f;
    v_rows[warp][c] = active ? v[(head + j) * D + c] : 0.f;
  }
  float dk_acc[kPerLane] = {}, dv_acc[kPerLane] = {};
  // Causal: queries before first_key see none of these keys; start at the tile holding it.
  const int query_begin = s.causal ? first_key / kTile * kTile : 0;
  for (int start = query_begin; start < s.t; start += kTile) {
    __syncthreads();
    for (int e = threadIdx.x; e < kTile * D; e += blockDim.x) {
      const int r = e / D, c = e % D, i = start + r;
      q_tile[r][c] = i < s.t ? q[(head + i) * D + c] : 0.f;
      do_tile[r][c] = i < s.t ? dout[(head + i) * D + c] : 0.f;
    }
    __syncthreads();
    const int i = start + lane;
    float p = 0.f, ds = 0.f;
    if (active && i < s.t && !(s.causal && j > i)) {
      float qk = 0.f, dp = 0.f;
      for (int c = 0; c < D; ++c) {
        qk += q_tile[lane][c] * k_rows[warp][c];
        dp += do_tile[lane][c] * v_rows[warp][c];
      }
      p = expf(qk * scale - lse[head + i]);
      ds = p * (dp - row_scratch[head + i]);
    }
    p_rows[warp][lane] = p;
    ds_rows[warp][lane] = ds;
    __syncwarp();
    for (int c = 0; c < kPerLane; ++c)
      for (int r = 0; r < kTile; ++r) {
        dv_acc[c] += p_rows[warp][r] * do_tile[r][lane + 32 * c];
        dk_acc[c] += ds_rows[warp][r] * q_tile[r][lane + 32 * c];
      }
    __syncwarp();
  }
  if (!active) return;
  for (int c = 0; c < kPerLane; ++c) {
    dk[(head + j) * D + lane + 32 * c] = dk_acc[c] * scale;
    dv[(head + j) * D + lane + 32 * c] = dv_acc[c];
  }
}

template <int D>
void launch_backward(const float* q, const float* k, const float* v, const float* o,
                     const float* dout, const float* lse, float* row_scratch, float* dq, float* dk,
                     float* dv, AttentionShape s, cudaStream_t stream) {
  const dim3 grid((s.t + kWarps - 1) / kWarps, s.bh);
  const float scale = 1.f / std::sqrt(float(D));
  // Stream order makes the second kernel wait for the first's row_scratch.
  dq_kernel<D><<<grid, kWarps * 32, 0, stream>>>(q, k, v, o, dout, lse, row_scratch, dq, s, scale);
  dkdv_kernel<D>
      <<<grid, kWarps * 32, 0, stream>>>(q, k, v, dout, lse, row_scratch, dk, dv, s, scale);
}
cudaError_t launch_flash_backward(const float* q, const float* k, const float* v, const float* o,
                                  const float* dout, const float* lse, float* row_scratch,
                                  float* dq, float* dk, float* dv, AttentionShape s,
                                  cudaStream_t stream) {
  if (s.d == 64)
    launch_backward<64>(q, k, v, o, dout, lse, row_scratch, dq, dk, dv, s, stream);
  else
    launch_backward<128>(q, k, v, o, dout, lse, row_scratch, dq, dk, dv, s, stream);
  return cudaGetLastError();
}
// END SOLUTION(lab10)

}  // namespace

cudaError_t flash_attention_backward(const float* q, const float* k, const float* v, const float* o,
                                     const float* dout, const float* lse, float* row_scratch,
                                     float* dq, float* dk, float* dv, AttentionShape s,
                                     cudaStream_t stream) {
  if (s.d != 64 && s.d != 128) return cudaErrorInvalidValue;
  if (s.bh == 0 || s.t == 0) return cudaSuccess;
  return launch_flash_backward(q, k, v, o, dout, lse, row_scratch, dq, dk, dv, s, stream);
}

}  // namespace lab10
