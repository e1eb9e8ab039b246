// Tensor-core kernels written with CUDA's warp matrix functions (<mma.h>, nvcuda::wmma), behind
// host wrappers that wmma_test.cpp calls on the CPU emulator. Each wrapper copies its inputs to
// device memory, launches, copies the result back and returns when the kernel is done. All
// matrices are dense, row-major unless the name says otherwise; T is __half or __nv_bfloat16.
// The kernels are in wmma_kernels.cu.
#pragma once

#include <cuda_bf16.h>
#include <cuda_fp16.h>

namespace wmmatest {

// One 16 x 16 x 16 tile, one warp: d = a * b (+ c when `c` is not null). b is read column-major
// when b_col_major (element (k, n) at b[n * 16 + k]); d is stored column-major when d_col_major.
template <typename T>
void mma_tile(const T* a, const T* b, bool b_col_major, const float* c, float* d, bool d_col_major);

// The same with a __half accumulator: d = a * b + c, c and d 16 x 16 __half, row-major.
void mma_tile_half_accumulator(const __half* a, const __half* b, const __half* c, __half* d);

// c (m x n, float) = a (m x k) * b (k x n): one warp per 16 x 16 tile of c, four warps per block
// (a 32 x 32 tile of c), a and b staged through shared memory 16 columns / rows of k at a time.
// m and n are multiples of 32, k of 16.
template <typename T>
void tiled_gemm(const T* a, const T* b, float* c, int m, int n, int k);

// After one 16 x 16 x 16 tile's mma_sync, what the kernel does with the accumulator's x[].
enum class Epilogue {
  kScaleByTwo,            // x[i] *= 2 for every i, then store_matrix_sync: layout-free, right
  kBiasAssumingRowMajor,  // x[i] += bias[column], the column guessed as if lane l held elements
                          // 8l to 8l + 7 of a row-major tile: wrong (the mapping is unspecified)
};
// d = epilogue(a * b), bias 16 floats.
void mma_tile_epilogue(const __half* a, const __half* b, const float* bias, float* d,
                       Epilogue epilogue);

// ---- calls the emulator must stop (death tests) ------------------------------------------------
enum class Misuse {
  kLaneSkipsMma,        // lane 31 skips mma_sync, then meets the others at store_matrix_sync
  kLaneExitsBeforeMma,  // lane 5 returns before mma_sync
  kLdmNotMultipleOf8,   // a __half load with ldm 12
  kMisalignedPointer,   // a load from 16 bytes into a 32-byte-aligned buffer
  kPointerPerLane,      // each lane loads B from its own row: a + 16 * (lane % 16)
  kPartialWarp,         // a block of 16 threads: half a warp calls load_matrix_sync
};
void misuse(Misuse kind);

}  // namespace wmmatest
