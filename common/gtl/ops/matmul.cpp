// ops::matmul: checks at the door, then the CPU path (OpenBLAS) or the CUDA path (matmul.cu).
#include "gtl/ops/matmul.h"

#include <cblas.h>

#include <algorithm>
#include <cstdlib>

#include "gtl/ops/detail/checks.h"

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
void matmul_cpu_f32(const Tensor& a, const Tensor& b, const Tensor& c, bool ta, bool tb,
                    float alpha, float beta, const MatmulShape& s) {
  float* cp = c.data<float>();
  if (s.k == 0) {  // an empty sum: op(a) op(b) is zero, only the beta * c term is left
    for (int64_t i = 0; i < s.m * s.n; ++i) cp[i] = beta == 0.f ? 0.f : beta * cp[i];
    return;
  }
  set_blas_threads_once();
  const auto lda = static_cast<int>(std::max<int64_t>(1, a.size(1)));
  const auto ldb = static_cast<int>(std::max<int64_t>(1, b.size(1)));
  const auto ldc = static_cast<int>(std::max<int64_t>(1, s.n));
  cblas_sgemm(CblasRowMajor, ta ? CblasTrans : CblasNoTrans, tb ? CblasTrans : CblasNoTrans,
              static_cast<int>(s.m), static_cast<int>(s.n), static_cast<int>(s.k), alpha,
              a.data<float>(), lda, b.data<float>(), ldb, beta, cp, ldc);
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
  if (a.dtype() == DType::Float32) {
    matmul_cpu_f32(a, b, c, transpose_a, transpose_b, alpha, beta, s);
    return;
  }
  // 16-bit inputs: widen to float32 (exact), multiply, round the result once to the input dtype.
  Tensor c32 = beta == 0.f ? Tensor::empty(c.shape()) : c.to(DType::Float32);
  matmul_cpu_f32(a.to(DType::Float32), b.to(DType::Float32), c32, transpose_a, transpose_b, alpha,
                 beta, s);
  Tensor out = c;  // a handle on the same data
  out.copy_(c32.to(c.dtype()));
}

Tensor matmul(const Tensor& a, const Tensor& b, bool transpose_a, bool transpose_b) {
  const MatmulShape s = matmul_shape("matmul", a, b, transpose_a, transpose_b);
  Tensor c = Tensor::empty({s.m, s.n}, a.dtype(), a.device());
  matmul_out(a, b, c, transpose_a, transpose_b, 1.f, 0.f);
  return c;
}

}  // namespace gtl::ops
