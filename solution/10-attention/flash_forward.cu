// Lab 10, TODO 2: FlashAttention's forward pass, the T x T scores never leaving the chip.
//
// Attention's output row o_i = sum_j softmax(S_i)_j v_j seems to need the whole row S_i before
// its first probability is known, which is why the naive kernels write S to memory. FlashAttention
// (Dao et al., 2022) never does: each block of queries streams the keys and values through shared
// memory a tile at a time, and keeps per query row only a few numbers and the output row being
// built, updated tile by tile. Lab 02's online softmax kept a running max and sum for one row of
// numbers; here a vector (the output row) rides along with them. The forward also saves lse_i,
// the log of the row's normaliser: backward rebuilds any P_ij from it without storing P.
//
// Reading: each key and value tile is read once per block of query rows, so DRAM traffic falls
// from O(T^2) (the naive kernels' S and P) to O(T^2 d / rows per block); with causal masking the
// tiles wholly above the diagonal are not read at all.
#include <cmath>

#include "attention.h"
#include "warp_reduce.cuh"

namespace lab10 {

namespace {

// SOLUTION(lab10) step 2
constexpr int kWarps = 8;  // query rows per block, one warp each
constexpr int kTile = 32;  // keys per tile, one per lane

template <int D>
__global__ void flash_forward_kernel(const float* q, const float* k, const float* v, float* o,
                                     float* lse, AttentionShape s, float scale) {
  constexpr int kPerLane = D / 32;  // output columns each lane owns: lane + 32 c
  // The +1 keeps lane j's walk along row j of k from hitting one bank 32 times.
  __shared__ float k_tile[kTile][D + 1];
  __shared__ float v_tile[kTile][D];
  __shared__ float q_rows[kWarps][D];
  __shared__ float p_rows[kWarps][kTile];
  const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
  const int first_row = blockIdx.x * kWarps;
  const int i = first_row + warp;
  const bool active = i < s.t;  // tail rows still load tiles and meet every barrier
  const size_t head = size_t(blockIdx.y) * s.t;

  for (int c = lane; c < D; c += 32) q_rows[warp][c] = active ? q[(head + i) * D + c] : 0.f;
  float acc[kPerLane] = {};
  float m = -INFINITY, l = 0.f;
  const int last_row = min(first_row + kWarps, s.t) - 1;
  const int key_end = s.causal ? last_row + 1 : s.t;  // tiles past the diagonal: never loaded
  for (int start = 0; start < key_end; start += kTile) {
    __syncthreads();  // everyone is done with the previous tile
    for (int e = threadIdx.x; e < kTile * D; e += blockDim.x) {
      const int r = e / D, c = e % D, j = start + r;
      k_tile[r][c] = j < s.t ? k[(head + j) * D + c] : 0.f;
      v_tile[r][c] = j < s.t ? v[(head + j) * D + c] : 0.f;
    }
    __syncthreads();
    const int j = start + lane;
    float score = -INFINITY;
    if (active && j < s.t && !(s.causal && j > i)) {
      float dot = 0.f;
      for (int c = 0; c < D; ++c) dot += q_rows[warp][c] * k_tile[lane][c];
      score = dot * scale;
    }
    const float m_new = fmaxf(m, warp_max(score));
    // A row that has seen no key yet has m_new = -inf: nothing to rescale, nothing to add.
    const float rescale = m_new == -INFINITY ? 1.f : expf(m - m_new);
    const float p = score == -INFINITY ? 0.f : expf(score - m_new);
    l = l * rescale + warp_sum(p);
    p_rows[warp][lane] = p;
    __syncwarp();
    for (int c = 0; c < kPerLane; ++c) {
      float a = acc[c] * rescale;
      for (int r = 0; r < kTile; ++r) a += p_rows[warp][r] * v_tile[r][lane + 32 * c];
      acc[c] = a;
    }
    m = m_new;
  }
  if (!active) return;
  for (int c = 0; c < kPerLane; ++c) o[(head + i) * D + lane + 32 * c] = acc[c] / l;
  if (lane == 0) lse[head + i] = m + logf(l);
}

template <int D>
void launch_forward(const float* q, const float* k, const float* v, float* o, float* lse,
                    AttentionShape s, cudaStream_t stream) {
  const dim3 grid((s.t + kWarps - 1) / kWarps, s.bh);
  flash_forward_kernel<D>
      <<<grid, kWarps * 32, 0, stream>>>(q, k, v, o, lse, s, 1.f / std::sqrt(float(D)));
}
cudaError_t launch_flash_forward(const float* q, const float* k, const float* v, float* o,
                                 float* lse, AttentionShape s, cudaStream_t stream) {
  if (s.d == 64)
    launch_forward<64>(q, k, v, o, lse, s, stream);
  else
    launch_forward<128>(q, k, v, o, lse, s, stream);
  return cudaGetLastError();
}
// END SOLUTION(lab10)

}  // namespace

cudaError_t flash_attention_forward(const float* q, const float* k, const float* v, float* o,
                                    float* lse, AttentionShape s, cudaStream_t stream) {
  if (s.d != 64 && s.d != 128) return cudaErrorInvalidValue;
  if (s.bh == 0 || s.t == 0) return cudaSuccess;
  return launch_flash_forward(q, k, v, o, lse, s, stream);
}

}  // namespace lab10
