// Lab 10, attention and tensor cores: the attention kernels you write.
//
// This header is part of the pristine lab (labs/10-attention/include): do not edit it. Your files
// are in starter/10-attention/; the map from TODO to file, test and benchmark is in the handout,
// labs/10-attention/README.md.
//
// Every function takes device pointers, launches its kernels on `stream` and returns without
// waiting. Tensors are row-major float32: q, k, v, o and their gradients [bh, t, d] (bh = batch x
// heads, each (batch, head) pair independent), the softmax scale 1 / sqrt(d). With `causal`,
// query i sees keys j <= i only.
#pragma once

#include <cuda_runtime.h>  // cudaStream_t (the CPU emulator brings its own)

#include "attention_shape.h"

namespace lab10 {

// ---- 1. Naive attention (naive_attention.cu) ---------------------------------------------------
// S = q k^T / sqrt(d) into `scores` [bh, t, t] (masked entries -inf), P = softmax of each row of
// S written over S, o = P v. Any d >= 1. The t x t matrix lives in memory: the baseline.
void attention_naive(const float* q, const float* k, const float* v, float* scores, float* o,
                     AttentionShape s, cudaStream_t stream);  // TODO 1

// ---- 2. FlashAttention forward (flash_forward.cu) ----------------------------------------------
// o as above, and lse [bh, t]: lse_i = log sum_j exp(S_ij) over the keys query i sees (natural
// log), the one number per row that backward needs to rebuild P. d is 64 or 128 (anything else:
// cudaErrorInvalidValue, nothing launched). No buffer beyond o and lse: the scores exist only a
// tile at a time, on chip.
cudaError_t flash_attention_forward(const float* q, const float* k, const float* v, float* o,
                                    float* lse, AttentionShape s, cudaStream_t stream);  // TODO 2

// ---- 3. FlashAttention backward (flash_backward.cu) --------------------------------------------
// From q, k, v, o, the output gradient dout and the forward's lse: dq, dk, dv [bh, t, d],
// overwritten. `row_scratch` [bh, t]: one float per query row, yours to use. d is 64 or 128 (else
// cudaErrorInvalidValue). Deterministic: the same inputs give the same bits on every run, whatever
// order the GPU runs the blocks in. No buffer beyond these.
cudaError_t flash_attention_backward(const float* q, const float* k, const float* v, const float* o,
                                     const float* dout, const float* lse, float* row_scratch,
                                     float* dq, float* dk, float* dv, AttentionShape s,
                                     cudaStream_t stream);  // TODO 3

}  // namespace lab10
