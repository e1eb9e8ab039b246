// Kernels for wmma_test.cpp, written as ordinary CUDA with the warp matrix functions: under nvcc
// they run on tensor cores (sm_80+ for __nv_bfloat16), on the CPU emulator through its mma.h
// (common/emulator). The epilogue and misuse kernels are wrong on purpose: their comments say so.
#include <cuda_runtime.h>
#include <mma.h>

#include <cstdint>

#include "wmma_kernels.h"

namespace wmmatest {

namespace {

using namespace nvcuda;
constexpr int kTile = 16;

// ---- one tile ----------------------------------------------------------------------------------
template <typename T, typename LayoutB>
__global__ void mma_tile_kernel(const T* a, const T* b, const float* c, float* d,
                                bool d_col_major) {
  wmma::fragment<wmma::matrix_a, kTile, kTile, kTile, T, wmma::row_major> fa;
  wmma::fragment<wmma::matrix_b, kTile, kTile, kTile, T, LayoutB> fb;
  wmma::fragment<wmma::accumulator, kTile, kTile, kTile, float> acc;
  wmma::load_matrix_sync(fa, a, kTile);
  wmma::load_matrix_sync(fb, b, kTile);
  if (c != nullptr)
    wmma::load_matrix_sync(acc, c, kTile, wmma::mem_row_major);
  else
    wmma::fill_fragment(acc, 0.f);
  wmma::mma_sync(acc, fa, fb, acc);  // D is C: allowed
  wmma::store_matrix_sync(d, acc, kTile, d_col_major ? wmma::mem_col_major : wmma::mem_row_major);
}

__global__ void mma_tile_half_accumulator_kernel(const __half* a, const __half* b, const __half* c,
                                                 __half* d) {
  wmma::fragment<wmma::matrix_a, kTile, kTile, kTile, __half, wmma::row_major> fa;
  wmma::fragment<wmma::matrix_b, kTile, kTile, kTile, __half, wmma::row_major> fb;
  wmma::fragment<wmma::accumulator, kTile, kTile, kTile, __half> acc;
  wmma::load_matrix_sync(fa, a, kTile);
  wmma::load_matrix_sync(fb, b, kTile);
  wmma::load_matrix_sync(acc, c, kTile, wmma::mem_row_major);
  wmma::mma_sync(acc, fa, fb, acc);
  wmma::store_matrix_sync(d, acc, kTile, wmma::mem_row_major);
}

// ---- a tiled GEMM ------------------------------------------------------------------------------
// Block (128 threads) = 2 x 2 warps = a 32 x 32 tile of c. The shared tiles are padded (row
// strides 24 and 40 elements: multiples of 8, each warp's 16 x 16 piece 32-byte aligned). a's is
// a static array, b's is dynamic shared memory (the launch gives kTile * kLdB elements): wmma
// pointers into either kind must be 32-byte aligned.
constexpr int kBlockTile = 32, kLdA = 24, kLdB = 40;

template <typename T>
__global__ void tiled_gemm_kernel(const T* a, const T* b, float* c, int n, int k) {
  __shared__ __align__(32) T as[kBlockTile * kLdA];  // 32 rows of a x 16 columns of k
  // 16 rows of k x 32 columns of b. Raw bytes: one extern array name with two element types (the
  // two instantiations) does not compile under nvcc.
  extern __shared__ __align__(32) unsigned char raw[];
  T* const bs = reinterpret_cast<T*>(raw);
  const int warp = threadIdx.x / 32, wr = warp / 2, wc = warp % 2;
  const int row0 = blockIdx.y * kBlockTile, col0 = blockIdx.x * kBlockTile;
  wmma::fragment<wmma::accumulator, kTile, kTile, kTile, float> acc;
  wmma::fill_fragment(acc, 0.f);
  for (int k0 = 0; k0 < k; k0 += kTile) {
    for (int i = threadIdx.x; i < kBlockTile * kTile; i += blockDim.x) {
      const int r = i / kTile, q = i % kTile;  // a's 32 x 16 piece
      as[r * kLdA + q] = a[size_t(row0 + r) * k + k0 + q];
      const int kr = i / kBlockTile, cc = i % kBlockTile;  // b's 16 x 32 piece
      bs[kr * kLdB + cc] = b[size_t(k0 + kr) * n + col0 + cc];
    }
    __syncthreads();
    wmma::fragment<wmma::matrix_a, kTile, kTile, kTile, T, wmma::row_major> fa;
    wmma::fragment<wmma::matrix_b, kTile, kTile, kTile, T, wmma::row_major> fb;
    wmma::load_matrix_sync(fa, as + wr * kTile * kLdA, kLdA);
    wmma::load_matrix_sync(fb, bs + wc * kTile, kLdB);
    wmma::mma_sync(acc, fa, fb, acc);
    __syncthreads();  // before the next piece overwrites as and bs
  }
  wmma::store_matrix_sync(c + size_t(row0 + wr * kTile) * n + col0 + wc * kTile, acc, n,
                          wmma::mem_row_major);
}

// ---- epilogues ---------------------------------------------------------------------------------
__global__ void mma_tile_epilogue_kernel(const __half* a, const __half* b, const float* bias,
                                         float* d, Epilogue epilogue) {
  wmma::fragment<wmma::matrix_a, kTile, kTile, kTile, __half, wmma::row_major> fa;
  wmma::fragment<wmma::matrix_b, kTile, kTile, kTile, __half, wmma::row_major> fb;
  wmma::fragment<wmma::accumulator, kTile, kTile, kTile, float> acc;
  wmma::load_matrix_sync(fa, a, kTile);
  wmma::load_matrix_sync(fb, b, kTile);
  wmma::fill_fragment(acc, 0.f);
  wmma::mma_sync(acc, fa, fb, acc);
  const int lane = threadIdx.x % 32;
  for (int i = 0; i < acc.num_elements; ++i) {
    if (epilogue == Epilogue::kScaleByTwo)
      acc.x[i] *= 2.f;
    else
      acc.x[i] += bias[(lane * acc.num_elements + i) % kTile];  // WRONG: assumes a layout
  }
  wmma::store_matrix_sync(d, acc, kTile, wmma::mem_row_major);
}

// ---- misuse ------------------------------------------------------------------------------------
__global__ void misuse_kernel(const __half* a, float* d, Misuse kind) {
  const int lane = threadIdx.x % 32;
  wmma::fragment<wmma::matrix_a, kTile, kTile, kTile, __half, wmma::row_major> fa;
  wmma::fragment<wmma::matrix_b, kTile, kTile, kTile, __half, wmma::col_major> fb;
  wmma::fragment<wmma::accumulator, kTile, kTile, kTile, float> acc;
  const unsigned ldm = kind == Misuse::kLdmNotMultipleOf8 ? 12 : kTile;
  wmma::load_matrix_sync(fa, kind == Misuse::kMisalignedPointer ? a + 8 : a, ldm);
  wmma::load_matrix_sync(fb, kind == Misuse::kPointerPerLane ? a + kTile * (lane % 16) : a, kTile);
  wmma::fill_fragment(acc, 0.f);
  if (kind == Misuse::kLaneExitsBeforeMma && lane == 5) return;
  if (kind != Misuse::kLaneSkipsMma || lane != 31) wmma::mma_sync(acc, fa, fb, acc);
  wmma::store_matrix_sync(d, acc, kTile, wmma::mem_row_major);
}

// Device copies of host arrays, freed at the end of the wrapper.
template <typename T>
T* to_device(const T* host, size_t count) {
  T* p = nullptr;
  cudaMalloc(&p, count * sizeof(T));
  cudaMemcpy(p, host, count * sizeof(T), cudaMemcpyHostToDevice);
  return p;
}

}  // namespace

template <typename T>
void mma_tile(const T* a, const T* b, bool b_col_major, const float* c, float* d,
              bool d_col_major) {
  constexpr int kElems = kTile * kTile;
  T* da = to_device(a, kElems);
  T* db = to_device(b, kElems);
  float* dc = c != nullptr ? to_device(c, kElems) : nullptr;
  float* dd = nullptr;
  cudaMalloc(&dd, kElems * sizeof(float));
  if (b_col_major)
    mma_tile_kernel<T, wmma::col_major><<<1, 32>>>(da, db, dc, dd, d_col_major);
  else
    mma_tile_kernel<T, wmma::row_major><<<1, 32>>>(da, db, dc, dd, d_col_major);
  cudaMemcpy(d, dd, kElems * sizeof(float), cudaMemcpyDeviceToHost);
  cudaFree(da);
  cudaFree(db);
  cudaFree(dc);
  cudaFree(dd);
}
template void mma_tile(const __half*, const __half*, bool, const float*, float*, bool);
template void mma_tile(const __nv_bfloat16*, const __nv_bfloat16*, bool, const float*, float*,
                       bool);

void mma_tile_half_accumulator(const __half* a, const __half* b, const __half* c, __half* d) {
  constexpr int kElems = kTile * kTile;
  __half* da = to_device(a, kElems);
  __half* db = to_device(b, kElems);
  __half* dc = to_device(c, kElems);
  __half* dd = nullptr;
  cudaMalloc(&dd, kElems * sizeof(__half));
  mma_tile_half_accumulator_kernel<<<1, 32>>>(da, db, dc, dd);
  cudaMemcpy(d, dd, kElems * sizeof(__half), cudaMemcpyDeviceToHost);
  cudaFree(da);
  cudaFree(db);
  cudaFree(dc);
  cudaFree(dd);
}

template <typename T>
void tiled_gemm(const T* a, const T* b, float* c, int m, int n, int k) {
  T* da = to_device(a, size_t(m) * k);
  T* db = to_device(b, size_t(k) * n);
  float* dc = nullptr;
  cudaMalloc(&dc, size_t(m) * n * sizeof(float));
  tiled_gemm_kernel<T>
      <<<dim3(n / kBlockTile, m / kBlockTile), 128, kTile * kLdB * sizeof(T)>>>(da, db, dc, n, k);
  cudaMemcpy(c, dc, size_t(m) * n * sizeof(float), cudaMemcpyDeviceToHost);
  cudaFree(da);
  cudaFree(db);
  cudaFree(dc);
}
template void tiled_gemm(const __half*, const __half*, float*, int, int, int);
template void tiled_gemm(const __nv_bfloat16*, const __nv_bfloat16*, float*, int, int, int);

void mma_tile_epilogue(const __half* a, const __half* b, const float* bias, float* d,
                       Epilogue epilogue) {
  constexpr int kElems = kTile * kTile;
  __half* da = to_device(a, kElems);
  __half* db = to_device(b, kElems);
  float* dbias = to_device(bias, kTile);
  float* dd = nullptr;
  cudaMalloc(&dd, kElems * sizeof(float));
  mma_tile_epilogue_kernel<<<1, 32>>>(da, db, dbias, dd, epilogue);
  cudaMemcpy(d, dd, kElems * sizeof(float), cudaMemcpyDeviceToHost);
  cudaFree(da);
  cudaFree(db);
  cudaFree(dbias);
  cudaFree(dd);
}

void misuse(Misuse kind) {
  __half* a = nullptr;
  float* d = nullptr;
  cudaMalloc(&a, 2 * kTile * kTile * sizeof(__half));  // room for the misaligned tile
  cudaMalloc(&d, kTile * kTile * sizeof(float));
  cudaMemset(a, 0, 2 * kTile * kTile * sizeof(__half));
  misuse_kernel<<<1, kind == Misuse::kPartialWarp ? 16 : 32>>>(a, d, kind);
  cudaDeviceSynchronize();
  cudaFree(a);
  cudaFree(d);
}

}  // namespace wmmatest
