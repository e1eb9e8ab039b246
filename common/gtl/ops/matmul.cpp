// ops::matmul: checks at the door, then the CPU path (OpenBLAS) or the CUDA path (matmul.cu).
#include "gtl/ops/matmul.h"

#include <cblas.h>

#include <algorithm>
#include <cstdlib>
#include <vector>

#include "gtl/ops/detail/checks.h"
#include "gtl/ops/math_mode.h"
#include "gtl/tensor/dispatch.h"

#ifdef GTL_WITH_CUDA
#include "gtl/ops/detail/matmul_cuda.h"
#endif

namespace gtl::ops {

namespace {

std::string operand_str(const char* name, const Tensor& t, bool transposed) {
  return std::string(name) + " " + shape_str(t.shape()) + (transposed ? " transposed" : "");
}

// OpenBLAS threads: 1 unless GTL_BLAS_THREADS (or OpenBLAS's own OPENBLAS_NUM_THREADS) says
// otherwise. The course's CPU GEMMs are small, the machines it runs on are often busy (2-core CI
// runners, simulated ranks that are themselves threads), and an OpenBLAS that starts a thread per
// core for every caller oversubscribes them: the demo's 250 steps took 73 s on a loaded 2-core
// machine with OpenBLAS's default against 7 s with one thread.
void set_blas_threads_once() {
  static const bool done = [] {
    const char* ours = std::getenv("GTL_BLAS_THREADS");
    if (ours == nullptr && std::getenv("OPENBLAS_NUM_THREADS") != nullptr) return true;
    openblas_set_num_threads(ours ? std::max(1, std::atoi(ours)) : 1);
    return true;
  }();
  (void)done;
}

// c = alpha * op(a) op(b) + beta * c in float32 with OpenBLAS. cblas_sgemm takes the row-major
// layout directly; the leading dimension of each matrix is its stored row length.
void sgemm_cpu(const float* a, const float* b, float* c, int64_t lda, int64_t ldb, bool ta, bool tb,
               float alpha, float beta, const MatmulShape& s) {
  if (s.k == 0) {  // an empty sum: op(a) op(b) is zero, only the beta * c term is left
    for (int64_t i = 0; i < s.m * s.n; ++i) c[i] = beta == 0.f ? 0.f : beta * c[i];
    return;
  }
  set_blas_threads_once();
  if (row_invariant_enabled()) {
    // Row i of c is op(b)^T times row i of op(a): the same call whatever m is (math_mode.h).
    // The row is copied to contiguous memory first: a BLAS may take another path for a strided
    // vector (a transposed a), and then a row computed alone would differ from the same row
    // computed among others.
    std::vector<float> row(static_cast<size_t>(s.k));
    for (int64_t i = 0; i < s.m; ++i) {
      for (int64_t l = 0; l < s.k; ++l)
        row[static_cast<size_t>(l)] = ta ? a[l * lda + i] : a[i * lda + l];
      // op(b) is [k, n]: b stored [k, n] multiplies as its transpose, b stored [n, k] as is.
      cblas_sgemv(CblasRowMajor, tb ? CblasNoTrans : CblasTrans, static_cast<int>(tb ? s.n : s.k),
                  static_cast<int>(tb ? s.k : s.n), alpha, b,
                  static_cast<int>(std::max<int64_t>(1, ldb)), row.data(), 1, beta, c + i * s.n, 1);
    }
    return;
  }
  cblas_sgemm(CblasRowMajor, ta ? CblasTrans : CblasNoTrans, tb ? CblasTrans : CblasNoTrans,
              static_cast<int>(s.m), static_cast<int>(s.n), static_cast<int>(s.k), alpha, a,
              static_cast<int>(std::max<int64_t>(1, lda)), b,
              static_cast<int>(std::max<int64_t>(1, ldb)), beta, c,
              static_cast<int>(std::max<int64_t>(1, s.n)));
}

// The float32 values of a 16-bit tensor, in a plain vector.
template <typename T>
std::vector<float> widened(const Tensor& t, bool with_values) {
  std::vector<float> out(static_cast<size_t>(t.numel()));
  if (!with_values) return out;
  const T* p = t.data<T>();
  for (size_t i = 0; i < out.size(); ++i) out[i] = convert<float>(p[i]);
  return out;
}

// 16-bit inputs, as cuBLAS computes them: each element widened to float32 (exact), float32 sums,
// the result rounded once to c's dtype. The float32 copies are this function's scratch, plain
// vectors and not tensors: on a GPU the widening happens in registers and the caching allocator
// sees only the half output, so the CPU's allocator statistics must not see more (the labs grade
// a mixed-precision step's peak memory to the byte on the CPU).
template <typename T>
void matmul_cpu_half(const Tensor& a, const Tensor& b, const Tensor& c, bool ta, bool tb,
                     float alpha, float beta, const MatmulShape& s) {
  const std::vector<float> a32 = widened<T>(a, true), b32 = widened<T>(b, true);
  std::vector<float> c32 = widened<T>(c, beta != 0.f);
  sgemm_cpu(a32.data(), b32.data(), c32.data(), a.size(1), b.size(1), ta, tb, alpha, beta, s);
  T* out = c.data<T>();
  for (size_t i = 0; i < c32.size(); ++i) out[i] = convert<T>(c32[i]);
}

}  // namespace

MatmulShape matmul_shape(const char* op, const Tensor& a, const Tensor& b, bool transpose_a,
                         bool transpose_b) {
  GTL_CHECK(a.defined() && b.defined(), op << ": an operand is an undefined tensor");
  GTL_CHECK(a.dim() == 2 && b.dim() == 2, op << ": expected 2-D matrices, got a "
                                             << shape_str(a.shape()) << " and b "
                                             << shape_str(b.shape()));
  check_same_device(op, {&a, &b});
  GTL_CHECK(a.dtype() == b.dtype(), op << ": a is " << dtype_name(a.dtype()) << " but b is "
                                       << dtype_name(b.dtype()) << "; cast one of them first");
  GTL_CHECK(is_floating(a.dtype()),
            op << ": expected float32, float16 or bfloat16, got " << dtype_name(a.dtype()));
  MatmulShape s;
  s.m = transpose_a ? a.size(1) : a.size(0);
  s.k = transpose_a ? a.size(0) : a.size(1);
  const int64_t kb = transpose_b ? b.size(1) : b.size(0);
  s.n = transpose_b ? b.size(0) : b.size(1);
  GTL_CHECK(s.k == kb, op << ": inner dimensions differ: " << operand_str("a", a, transpose_a)
                          << " has " << s.k << " columns, " << operand_str("b", b, transpose_b)
                          << " has " << kb << " rows (op(a) is [M, K], op(b) must be [K, N])");
  return s;
}

void matmul_out(const Tensor& a, const Tensor& b, const Tensor& c, bool transpose_a,
                bool transpose_b, float alpha, float beta) {
  const MatmulShape s = matmul_shape("matmul_out", a, b, transpose_a, transpose_b);
  GTL_CHECK(c.defined(), "matmul_out: the output c is an undefined tensor");
  check_same_device("matmul_out", {&a, &b, &c});
  check_dtype("matmul_out (output c)", c, a.dtype());
  check_shape("matmul_out (output c = op(a) op(b))", c, Shape{s.m, s.n});
  if (s.m == 0 || s.n == 0) return;

  if (a.is_cuda()) {
#ifdef GTL_WITH_CUDA
    cuda::matmul(a, b, c, transpose_a, transpose_b, alpha, beta, s.m, s.k, s.n);
    return;
#else
    detail::no_cuda("matmul_out", a);
#endif
  }
  switch (a.dtype()) {
    case DType::Float32:
      sgemm_cpu(a.data<float>(), b.data<float>(), c.data<float>(), a.size(1), b.size(1),
                transpose_a, transpose_b, alpha, beta, s);
      return;
    case DType::Float16:
      return matmul_cpu_half<half>(a, b, c, transpose_a, transpose_b, alpha, beta, s);
    case DType::BFloat16:
      return matmul_cpu_half<bfloat16>(a, b, c, transpose_a, transpose_b, alpha, beta, s);
    default:
      GTL_CHECK(false, "matmul_out: no CPU path for " << dtype_name(a.dtype()));
  }
}

Tensor matmul(const Tensor& a, const Tensor& b, bool transpose_a, bool transpose_b) {
  const MatmulShape s = matmul_shape("matmul", a, b, transpose_a, transpose_b);
  Tensor c = Tensor::empty({s.m, s.n}, a.dtype(), a.device());
  matmul_out(a, b, c, transpose_a, transpose_b, 1.f, 0.f);
  return c;
}

namespace {

// c_i = alpha * op(a_i) op(b_i) + beta * c_i, each element a float32 sum over l in order (see
// matmul.h for why this is not OpenBLAS).
template <typename T>
void batched_cpu(const T* a, const T* b, T* c, bool ta, bool tb, float alpha, float beta,
                 int64_t batch, int64_t m, int64_t k, int64_t n) {
  for (int64_t p = 0; p < batch; ++p) {
    const T* ap = a + p * m * k;
    const T* bp = b + p * k * n;
    T* cp = c + p * m * n;
    for (int64_t i = 0; i < m; ++i)
      for (int64_t j = 0; j < n; ++j) {
        float sum = 0.f;
        for (int64_t l = 0; l < k; ++l) {
          const float x = convert<float>(ta ? ap[l * m + i] : ap[i * k + l]);
          const float y = convert<float>(tb ? bp[j * k + l] : bp[l * n + j]);
          sum += x * y;
        }
        const float old = beta == 0.f ? 0.f : beta * convert<float>(cp[i * n + j]);
        cp[i * n + j] = convert<T>(alpha * sum + old);
      }
  }
}

}  // namespace

void batched_matmul_out(const Tensor& a, const Tensor& b, const Tensor& c, bool transpose_a,
                        bool transpose_b, float alpha, float beta) {
  const char* op = "batched_matmul";
  GTL_CHECK(a.defined() && b.defined() && c.defined(), op << ": an operand is undefined");
  GTL_CHECK(a.dim() == 3 && b.dim() == 3 && c.dim() == 3,
            op << ": expected 3-D [batch, rows, cols] tensors, got a " << shape_str(a.shape())
               << ", b " << shape_str(b.shape()) << ", c " << shape_str(c.shape()));
  GTL_CHECK(a.size(0) == b.size(0) && a.size(0) == c.size(0),
            op << ": batch sizes differ: a " << shape_str(a.shape()) << ", b "
               << shape_str(b.shape()) << ", c " << shape_str(c.shape()));
  // The per-matrix checks of matmul, on the first matrix's shape.
  const MatmulShape s =
      matmul_shape(op, a.select(0).reshape({a.size(1), a.size(2)}),
                   b.select(0).reshape({b.size(1), b.size(2)}), transpose_a, transpose_b);
  check_same_device(op, {&a, &b, &c});
  check_dtype("batched_matmul (output c)", c, a.dtype());
  const int64_t batch = a.size(0);
  check_shape("batched_matmul (output c)", c, Shape{batch, s.m, s.n});
  if (batch == 0 || s.m == 0 || s.n == 0) return;
  if (a.is_cuda()) {
#ifdef GTL_WITH_CUDA
    cuda::batched_matmul(a, b, c, transpose_a, transpose_b, alpha, beta, batch, s.m, s.k, s.n);
    return;
#else
    detail::no_cuda(op, a);
#endif
  }
  GTL_DISPATCH_FLOATING(a.dtype(), T, {
    batched_cpu<T>(a.data<T>(), b.data<T>(), c.data<T>(), transpose_a, transpose_b, alpha, beta,
                   batch, s.m, s.k, s.n);
  });
}

Tensor batched_matmul(const Tensor& a, const Tensor& b, bool transpose_a, bool transpose_b,
                      float alpha) {
  GTL_CHECK(a.dim() == 3 && b.dim() == 3, "batched_matmul: expected 3-D tensors, got a "
                                              << shape_str(a.shape()) << " and b "
                                              << shape_str(b.shape()));
  const int64_t m = transpose_a ? a.size(2) : a.size(1);
  const int64_t n = transpose_b ? b.size(1) : b.size(2);
  Tensor c = Tensor::empty({a.size(0), m, n}, a.dtype(), a.device());
  batched_matmul_out(a, b, c, transpose_a, transpose_b, alpha, 0.f);
  return c;
}

}  // namespace gtl::ops
