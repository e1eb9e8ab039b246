// Math-mode switches of the GEMM and convolution ops: how much precision a GPU may trade for
// speed, and whether cuDNN may spend time measuring its algorithms.
//
// TF32 (TensorFloat-32) is a switch, off by default, because it changes results, not only speed.
// On Ampere and newer GPUs the tensor cores can multiply float32 matrices after rounding each
// input to 10 mantissa bits (TF32) while still accumulating in float32: about 6x the FP32
// throughput on an H100 (325 vs 50 TFLOP/s at 4096^3), but each product carries a relative error
// near 1e-3 instead of 1e-7. Whether that is acceptable is the caller's decision; PyTorch made
// the same choice (torch.backends.cuda.matmul.allow_tf32 defaults to False). The CPU path
// ignores the switch: OpenBLAS always computes in full float32.
//
// Benchmark mode is a switch because cuDNN offers several algorithms per convolution (implicit
// GEMM, FFT, Winograd, ...) and its heuristic guess is not always the fastest for a given shape.
// In benchmark mode the first call for a shape runs every algorithm once and keeps the fastest in
// a cache keyed by the shapes, like torch.backends.cudnn.benchmark: it pays off when the shapes
// repeat (a training loop), and costs a slow first step when they do not.
//
// Row invariance is a switch because it costs speed on the CPU. A BLAS picks its kernel, blocking
// and summation order by the shape of the call, so row i of x @ W can round differently when x
// has 1 row than when it has 34 (measured with OpenBLAS's Haswell sgemm: 1 ulp). A KV cache
// decodes one position at a time where a full forward multiplies all of them together, so the
// two disagree in the last bits unless every row is computed the same way whatever the number of
// rows: "batch invariance", the property LLM inference servers need for reproducible outputs.
// With the switch on, the CPU matmul computes each output row with its own matrix-vector product
// (cblas_sgemv), which depends on that row alone; the GPU path ignores it (cuBLAS chooses its
// kernels by shape: a batch-invariant GPU GEMM fixes its tiling and split-K for every M).
//
// The switches are per thread, read at each call: the simulated ranks of the distributed labs are
// threads of one process, and one rank turning TF32 on must not change another rank's GEMMs in
// the middle of its step (a process-wide switch, as PyTorch's, would race there). A new thread
// starts with both off, whatever the thread that started it had set: set them in each rank. The
// Scoped* guards set one for a block and restore the previous value on exit, also when an
// exception leaves the block.
#pragma once

namespace gtl::ops {

// TF32 tensor-core math for float32 matmul and convolution on the GPU, for this thread. Default:
// off.
bool tf32_enabled();
void set_tf32_enabled(bool enabled);

// cuDNN algorithm choice by measurement (true) or by heuristic (false, the default), for this
// thread.
bool cudnn_benchmark_enabled();
void set_cudnn_benchmark(bool enabled);

// Every row of a CPU matmul computed independently of the others (see above), for this thread.
// Default: off.
bool row_invariant_enabled();
void set_row_invariant(bool enabled);

class ScopedRowInvariant {
 public:
  explicit ScopedRowInvariant(bool enabled) : previous_(row_invariant_enabled()) {
    set_row_invariant(enabled);
  }
  ~ScopedRowInvariant() { set_row_invariant(previous_); }
  ScopedRowInvariant(const ScopedRowInvariant&) = delete;
  ScopedRowInvariant& operator=(const ScopedRowInvariant&) = delete;

 private:
  bool previous_;
};

class ScopedTF32 {
 public:
  explicit ScopedTF32(bool enabled) : previous_(tf32_enabled()) { set_tf32_enabled(enabled); }
  ~ScopedTF32() { set_tf32_enabled(previous_); }
  ScopedTF32(const ScopedTF32&) = delete;
  ScopedTF32& operator=(const ScopedTF32&) = delete;

 private:
  bool previous_;
};

class ScopedCudnnBenchmark {
 public:
  explicit ScopedCudnnBenchmark(bool enabled) : previous_(cudnn_benchmark_enabled()) {
    set_cudnn_benchmark(enabled);
  }
  ~ScopedCudnnBenchmark() { set_cudnn_benchmark(previous_); }
  ScopedCudnnBenchmark(const ScopedCudnnBenchmark&) = delete;
  ScopedCudnnBenchmark& operator=(const ScopedCudnnBenchmark&) = delete;

 private:
  bool previous_;
};

}  // namespace gtl::ops
