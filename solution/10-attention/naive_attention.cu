// Lab 10, TODO 1: attention with the t x t scores in memory.
//
// S = q k^T / sqrt(d) (masked entries -inf), P = softmax of each row of S, o = P v, with S and P
// written to a buffer of t^2 floats per head. This is how attention ran before FlashAttention,
// and how the core's CausalSelfAttention still runs (it keeps P for backward): the memory grows
// with t^2 and every pass over S goes through DRAM. It is the baseline the benchmarks compare TODO
// 2 with, and a reference that is easy to trust.
#include <cmath>

#include "attention.h"

namespace lab10 {

namespace {

// SOLUTION(lab10) step 1
__global__ void scores_kernel(const float* q, const float* k, float* scores, AttentionShape s,
                              float scale) {
  const int j = blockIdx.x * blockDim.x + threadIdx.x;  // key
  const int i = blockIdx.y;                             // query
  const int h = blockIdx.z;
  if (j >= s.t) return;
  const size_t row = (size_t(h) * s.t + i);
  float* out = scores + row * s.t + j;
  if (s.causal && j > i) {
    *out = -INFINITY;
    return;
  }
  const float* qi = q + row * s.d;
  const float* kj = k + (size_t(h) * s.t + j) * s.d;
  float acc = 0.f;
  for (int c = 0; c < s.d; ++c) acc += qi[c] * kj[c];
  *out = acc * scale;
}

// One thread per row; a row always holds at least one unmasked score (key 0 is visible to all).
__global__ void softmax_rows_kernel(float* scores, int rows, int t) {
  const int r = blockIdx.x * blockDim.x + threadIdx.x;
  if (r >= rows) return;
  float* row = scores + size_t(r) * t;
  float m = -INFINITY;
  for (int j = 0; j < t; ++j) m = fmaxf(m, row[j]);
  float sum = 0.f;
  for (int j = 0; j < t; ++j) sum += expf(row[j] - m);
  for (int j = 0; j < t; ++j) row[j] = expf(row[j] - m) / sum;
}

__global__ void weighted_sum_kernel(const float* probs, const float* v, float* o,
                                    AttentionShape s) {
  const int c = blockIdx.x * blockDim.x + threadIdx.x;  // column of o
  const int i = blockIdx.y;
  const int h = blockIdx.z;
  if (c >= s.d) return;
  const float* p = probs + (size_t(h) * s.t + i) * s.t;
  const float* vh = v + size_t(h) * s.t * s.d;
  const int last = s.causal ? i : s.t - 1;
  float acc = 0.f;
  for (int j = 0; j <= last; ++j) acc += p[j] * vh[size_t(j) * s.d + c];
  o[(size_t(h) * s.t + i) * s.d + c] = acc;
}
void launch_attention_naive(const float* q, const float* k, const float* v, float* scores, float* o,
                            AttentionShape s, cudaStream_t stream) {
  const float scale = 1.f / std::sqrt(float(s.d));
  constexpr int kThreads = 128;
  scores_kernel<<<dim3((s.t + kThreads - 1) / kThreads, s.t, s.bh), kThreads, 0, stream>>>(
      q, k, scores, s, scale);
  const int rows = s.bh * s.t;
  softmax_rows_kernel<<<(rows + kThreads - 1) / kThreads, kThreads, 0, stream>>>(scores, rows, s.t);
  weighted_sum_kernel<<<dim3((s.d + kThreads - 1) / kThreads, s.t, s.bh), kThreads, 0, stream>>>(
      scores, v, o, s);
}
// END SOLUTION(lab10)

}  // namespace

void attention_naive(const float* q, const float* k, const float* v, float* scores, float* o,
                     AttentionShape s, cudaStream_t stream) {
  if (s.bh == 0 || s.t == 0) return;
  launch_attention_naive(q, k, v, scores, o, s, stream);
}

}  // namespace lab10
