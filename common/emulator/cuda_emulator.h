// A CPU emulator for CUDA kernels, for checking their correctness on machines without a GPU.
//
// A launch runs its blocks one after another. Inside a block every CUDA thread is a fiber with
// its own stack; the scheduler runs each fiber until it reaches __syncthreads(), a warp shuffle or
// its end, then moves to the next, so all threads of a block are at the same barrier before any
// goes past it. Shared memory is a function-local static (one block lives at a time), so a thread
// that reads shared memory another thread has not yet written (a missing __syncthreads) reads the
// wrong value, and a correctness test catches it. Launches take three thread orders in turn
// (forward, reverse, and warps running ahead of each other: see Schedule), because each order
// hides some missing barriers that another exposes.
//
// It rejects, as a GPU does, a launch with an empty grid or block, more than 1024 threads per
// block, blockDim.z above 64, gridDim.x above 2^31 - 1 or gridDim.y or .z above 65535
// (cudaGetLastError returns cudaErrorInvalidConfiguration), and stops the program at a
// __syncthreads some threads never reach, a shuffle over lanes that have exited, or a warp matrix
// call some lanes of the warp skip (a GPU would hang or give undefined results). Emulated tests are
// built with -fsanitize=address,alignment, so a read or write outside an array, or a float4 load
// from a misaligned address, stops the test with the kernel's line, as compute-sanitizer or the GPU
// itself would. A test's result buffers can be emu::KernelOutput: writable only while a kernel runs
// (and by cudaMemset or a copy from device memory), so a "kernel" whose host code computes the
// result and writes it fails, saying so. It does not model timing, coalescing, bank conflicts,
// tensor-core throughput, the memory model between blocks, or partial-warp masks: speed is measured
// on a GPU (the lab's benchmarks).
//
// Half precision and tensor cores: kernels may include <cuda_fp16.h>, <cuda_bf16.h> and <mma.h>,
// which here are this directory's. __half and __nv_bfloat16 convert as the core does (round to
// nearest even) and compute in float, rounded once. The warp matrix functions (nvcuda::wmma,
// shape m16n16k16) keep what a GPU enforces: every call is warp-collective (WarpCall,
// warp_collective below), the fragment's element-to-lane mapping is not row-major, ldm and
// 32-byte alignment are checked, and mma_sync sums in a stated order (mma.h), so a CPU reference
// summing that way agrees bit for bit. cudaMalloc and dynamic shared memory are 256-byte aligned.
//
// Kernel sources are compiled as C++ with this header forced in; CMake rewrites each launch
// `kernel<<<grid, block, smem, stream>>>(args)` into `emu::Launcher(kernel, grid, block, smem,
// stream)(args)` (cmake/GtlEmulator.cmake). The launcher takes the kernel's address before it sees
// the arguments, so a launch of a kernel template names its template arguments (`k<T><<<...>>>`);
// deducing them from the arguments, which nvcc allows, does not compile here.
#pragma once

#include <setjmp.h>
#include <signal.h>
#include <sys/mman.h>
#include <ucontext.h>
#include <unistd.h>

#if defined(__SANITIZE_ADDRESS__)
#include <sanitizer/common_interface_defs.h>

// Leaks are not a kernel's fault (a GPU reports none): only out-of-bounds accesses stop a test.
// The emulator's own SIGSEGV handler (emu::KernelOutput) must be allowed to replace ASan's. A
// device allocation the host cannot back fails as cudaMalloc does, instead of stopping the test.
extern "C" __attribute__((used)) inline const char* __asan_default_options() {
  return "detect_leaks=0:allow_user_segv_handler=1:allocator_may_return_null=1";
}
#endif

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <memory>
#include <mutex>
#include <source_location>
#include <string>
#include <tuple>
#include <type_traits>
#include <utility>
#include <vector>

// ---- the CUDA types and qualifiers kernels use -------------------------------------------------
struct dim3 {
  unsigned x = 1, y = 1, z = 1;
  dim3(unsigned x_ = 1, unsigned y_ = 1, unsigned z_ = 1) : x(x_), y(y_), z(z_) {}
};
struct uint3 {
  unsigned x = 0, y = 0, z = 0;
};
struct alignas(16) float4 {
  float x, y, z, w;
};
struct alignas(8) float2 {
  float x, y;
};
struct alignas(16) int4 {
  int x, y, z, w;
};
inline float4 make_float4(float x, float y, float z, float w) {
  return {x, y, z, w};
}
inline float2 make_float2(float x, float y) {
  return {x, y};
}
inline int4 make_int4(int x, int y, int z, int w) {
  return {x, y, z, w};
}

typedef struct CUstream_st* cudaStream_t;  // the same declarations as gtl/runtime/stream.h
typedef struct CUevent_st* cudaEvent_t;
enum cudaError {
  cudaSuccess = 0,
  cudaErrorInvalidValue = 1,
  cudaErrorMemoryAllocation = 2,
  cudaErrorInvalidConfiguration = 9,
  cudaErrorInvalidDevice = 101,
  cudaErrorInvalidResourceHandle = 400,
  cudaErrorIllegalState = 401,
  cudaErrorNotReady = 600,
  cudaErrorStreamCaptureUnsupported = 900,
  cudaErrorStreamCaptureInvalidated = 901,
  cudaErrorStreamCaptureImplicit = 906,
};
typedef enum cudaError cudaError_t;
enum cudaDeviceAttr {
  cudaDevAttrMultiProcessorCount,
  cudaDevAttrL2CacheSize,
  cudaDevAttrWarpSize,
  cudaDevAttrMemoryClockRate
};
enum cudaMemcpyKind {
  cudaMemcpyHostToHost,
  cudaMemcpyHostToDevice,
  cudaMemcpyDeviceToHost,
  cudaMemcpyDeviceToDevice,
  cudaMemcpyDefault
};
constexpr unsigned cudaStreamDefault = 0, cudaStreamNonBlocking = 1;
constexpr unsigned cudaEventDefault = 0, cudaEventDisableTiming = 2;

#define __global__
#define __device__
#define __host__
#define __forceinline__ inline
#define __noinline__ __attribute__((noinline))
#define __launch_bounds__(...)
#define __restrict__
#define __align__(n) __attribute__((aligned(n)))
#define __shared__ static
constexpr int warpSize = 32;

inline uint3 threadIdx, blockIdx;
inline dim3 blockDim, gridDim;

// ---- device math and intrinsics (the host library computes them) --------------------------------
using std::isfinite;
using std::isinf;
using std::isnan;
using std::max;
using std::min;
inline float rsqrtf(float x) {
  return 1.f / std::sqrt(x);
}
inline float __expf(float x) {
  return std::exp(x);
}
inline float __logf(float x) {
  return std::log(x);
}
inline float __sinf(float x) {
  return std::sin(x);
}
inline float __cosf(float x) {
  return std::cos(x);
}
inline float __powf(float x, float y) {
  return std::pow(x, y);
}
inline float __fdividef(float a, float b) {
  return a / b;
}
inline float __frcp_rn(float a) {
  return 1.f / a;
}
inline float __fadd_rn(float a, float b) {
  return a + b;
}
inline float __fmul_rn(float a, float b) {
  return a * b;
}
inline float __fmaf_rn(float a, float b, float c) {
  return std::fma(a, b, c);
}
inline float __saturatef(float x) {
  return std::clamp(x, 0.f, 1.f);
}
inline int __float_as_int(float x) {
  int i;
  std::memcpy(&i, &x, 4);
  return i;
}
inline float __int_as_float(int i) {
  float x;
  std::memcpy(&x, &i, 4);
  return x;
}
template <typename T>
T __ldg(const T* p) {
  return *p;
}

// One block runs at a time and fibers switch only at barriers: atomics are plain read-modify-write.
// The type comes from the pointer alone and the value converts to it, as with CUDA's overloads
// (atomicAdd(unsigned_counter, 1), atomicAdd(float_sum, 1)).
namespace emu {
// *p = update(*p), returning the old value: the read-modify-write of atomicAdd, Max, Min and Exch.
template <typename T, typename Update>
T atomic_update(T* p, Update update) {
  const T old = *p;
  *p = update(old);
  return old;
}
}  // namespace emu
template <typename T>
T atomicAdd(T* p, std::type_identity_t<T> v) {
  return emu::atomic_update(p, [v](T old) { return old + v; });
}
template <typename T>
T atomicMax(T* p, std::type_identity_t<T> v) {
  return emu::atomic_update(p, [v](T old) { return std::max(old, v); });
}
template <typename T>
T atomicMin(T* p, std::type_identity_t<T> v) {
  return emu::atomic_update(p, [v](T old) { return std::min(old, v); });
}
template <typename T>
T atomicExch(T* p, std::type_identity_t<T> v) {
  return emu::atomic_update(p, [v](T) { return v; });
}
template <typename T>
T atomicCAS(T* p, std::type_identity_t<T> compare, std::type_identity_t<T> v) {
  const T old = *p;  // written only when equal, as on a GPU
  if (old == compare) *p = v;
  return old;
}

// ---- the runtime calls host code makes. Device memory is host memory, and every call completes
// before it returns: streams and events keep their meaning for correctness (the order of work in
// one stream), but nothing overlaps, so a missing synchronisation goes unnoticed here. Errors
// are returned, and kept for cudaGetLastError, as the runtime does.
namespace emu {
inline cudaError_t g_last_error = cudaSuccess;
inline cudaError_t error(cudaError_t e) {
  if (e != cudaSuccess) g_last_error = e;
  return e;
}
// No GPU has 2^40 bytes: a size above that is a negative count converted to size_t.
constexpr size_t kImpossibleBytes = size_t{1} << 40;
// The emulated device's memory (an H100's 80 GiB, cudaGetDeviceProperties): no one allocation is
// larger.
constexpr size_t kDeviceBytes = size_t{80} << 30;
// How many cudaMalloc calls the process has made: a test can check that a function allocates no
// device memory of its own (lab 10's FlashAttention, whose point is the t x t buffer it never
// needs).
inline std::atomic<uint64_t> g_device_allocations{0};
inline uint64_t device_allocations() {
  return g_device_allocations.load();
}
}  // namespace emu

// ---- stream capture (CUDA graphs). Between cudaStreamBeginCapture and cudaStreamEndCapture on a
// stream, the work queued on that stream (launches, async copies and memsets, cuBLAS and cuDNN
// calls, graph launches) is recorded as the nodes of a graph instead of running; a launch keeps
// the arguments it was given (pointers and host scalars, by value), as a GPU's graph does. The
// emulator enforces the rules of cudaStreamCaptureModeGlobal that the core's code can break: while
// any capture is on, a stream or device synchronisation on the capturing stream, and cudaFree (it
// synchronises the device), are refused with cudaErrorStreamCaptureUnsupported and invalidate the
// capture; work on the legacy default stream is refused with cudaErrorStreamCaptureImplicit when
// the capturing stream is a blocking one (the legacy stream would wait for it), and runs at once,
// outside the graph, when it is non-blocking. cudaMalloc is one of the "potentially unsafe" calls
// (it may synchronise): refused likewise while a capture is on, unless the calling thread relaxed
// its mode with cudaThreadExchangeStreamCaptureMode (as an allocator whose pool grows during a
// capture must). A graph runs its nodes in the order they were recorded (one capturing stream: no
// forks or joins).
enum cudaStreamCaptureMode {
  cudaStreamCaptureModeGlobal = 0,
  cudaStreamCaptureModeThreadLocal = 1,
  cudaStreamCaptureModeRelaxed = 2
};
enum cudaStreamCaptureStatus {
  cudaStreamCaptureStatusNone = 0,
  cudaStreamCaptureStatusActive = 1,
  cudaStreamCaptureStatusInvalidated = 2
};
struct CUgraph_st {
  std::vector<std::function<void()>> nodes;
};
struct CUgraphExec_st {
  std::vector<std::function<void()>> nodes;
};
typedef struct CUgraph_st* cudaGraph_t;
typedef struct CUgraphExec_st* cudaGraphExec_t;

namespace emu {
struct Capture {
  cudaStream_t stream;
  cudaGraph_t graph;
  bool invalidated = false;
};
inline std::mutex g_capture_mutex;  // guards the two below
inline std::vector<Capture> g_captures;
inline std::vector<cudaStream_t> g_blocking_streams;  // made without cudaStreamNonBlocking

// The capture recording `stream`, or nullptr. The caller holds g_capture_mutex.
inline Capture* capture_of(cudaStream_t stream) {
  for (Capture& c : g_captures)
    if (c.stream == stream) return &c;
  return nullptr;
}

// A call a capture forbids: every capture on is invalidated, and the call fails with `why`.
// The caller holds g_capture_mutex.
inline cudaError_t refuse_while_capturing(cudaError_t why) {
  for (Capture& c : g_captures) c.invalidated = true;
  return error(why);
}

// Queues `work` on `stream`: records it when the stream is capturing, else runs it now (every
// call completes before it returns). Work on the legacy stream while a blocking stream captures
// is refused, as the runtime does.
inline cudaError_t enqueue(cudaStream_t stream, std::function<void()> work) {
  {
    const std::lock_guard<std::mutex> lock(g_capture_mutex);
    if (Capture* c = capture_of(stream)) {
      if (!c->invalidated) c->graph->nodes.push_back(std::move(work));
      return c->invalidated ? error(cudaErrorStreamCaptureInvalidated) : cudaSuccess;
    }
    if (stream == nullptr)
      for (const Capture& c : g_captures)
        if (std::find(g_blocking_streams.begin(), g_blocking_streams.end(), c.stream) !=
            g_blocking_streams.end())
          return refuse_while_capturing(cudaErrorStreamCaptureImplicit);
  }
  work();
  return cudaSuccess;
}

// cudaStreamSynchronize / cudaDeviceSynchronize / cudaFree: refused while capturing (see above).
// `stream` is the one synchronised, or nullptr for a device-wide wait.
inline cudaError_t check_wait_allowed(cudaStream_t stream, bool device_wide) {
  const std::lock_guard<std::mutex> lock(g_capture_mutex);
  if (g_captures.empty()) return cudaSuccess;
  if (device_wide || capture_of(stream) != nullptr)
    return refuse_while_capturing(cudaErrorStreamCaptureUnsupported);
  return cudaSuccess;
}

// This thread's capture mode (cudaThreadExchangeStreamCaptureMode); every capture here is global.
inline thread_local cudaStreamCaptureMode t_capture_mode = cudaStreamCaptureModeGlobal;

// A potentially unsafe call (cudaMalloc): refused while a capture is on, unless relaxed.
inline cudaError_t check_unsafe_call_allowed() {
  const std::lock_guard<std::mutex> lock(g_capture_mutex);
  if (g_captures.empty() || t_capture_mode == cudaStreamCaptureModeRelaxed) return cudaSuccess;
  return refuse_while_capturing(cudaErrorStreamCaptureUnsupported);
}
}  // namespace emu

inline cudaError_t cudaThreadExchangeStreamCaptureMode(cudaStreamCaptureMode* mode) {
  std::swap(*mode, emu::t_capture_mode);
  return cudaSuccess;
}

inline cudaError_t cudaMalloc(void** p, size_t n) {
  if (const cudaError_t e = emu::check_unsafe_call_allowed(); e != cudaSuccess) {
    *p = nullptr;
    return e;
  }
  ++emu::g_device_allocations;
  // 256-byte aligned, as cudaMalloc's (wmma loads need 32); the exact size, for AddressSanitizer.
  if (n > emu::kDeviceBytes || posix_memalign(p, 256, n == 0 ? 1 : n) != 0) *p = nullptr;
  return emu::error(*p ? cudaSuccess : cudaErrorMemoryAllocation);
}
template <typename T>
cudaError_t cudaMalloc(T** p, size_t n) {
  return cudaMalloc(reinterpret_cast<void**>(p), n);
}
inline cudaError_t cudaFree(void* p) {
  // cudaFree waits for the device: a capture forbids it (the memory stays allocated).
  if (const cudaError_t e = emu::check_wait_allowed(nullptr, true); e != cudaSuccess) return e;
  std::free(p);
  return cudaSuccess;
}
inline cudaError_t cudaMallocHost(void** p, size_t n) {
  return cudaMalloc(p, n);
}
template <typename T>
cudaError_t cudaMallocHost(T** p, size_t n) {
  return cudaMalloc(reinterpret_cast<void**>(p), n);
}
inline cudaError_t cudaFreeHost(void* p) {
  return cudaFree(p);
}
// ---- who wrote the output. A result buffer a test declares as emu::KernelOutput is read-only
// to the process except while a kernel launch runs, and while cudaMemset or a copy from device
// memory (device to device or device to host) writes it: those are how CUDA code fills a result.
// Host code that writes it itself, or copies a host array into it, stops the test with a message
// that says so: in an emulated check the result must be computed by kernel threads. (What it
// does not see: a result computed on the host, copied into other device memory and from there
// into the output; or a kernel that only copies a host-computed answer.)
namespace emu {
struct GuardedOutput {
  char* base;
  size_t bytes;
  const char* name;
};
inline std::vector<GuardedOutput> g_outputs;

inline void set_outputs_writable(bool writable) {
  const long page = sysconf(_SC_PAGESIZE);
  for (const auto& o : g_outputs) {
    char* first = o.base - (reinterpret_cast<uintptr_t>(o.base) % page);
    mprotect(first, static_cast<size_t>(o.base + o.bytes - first),
             writable ? PROT_READ | PROT_WRITE : PROT_READ);
  }
}

// Writable for the duration of one emulator call that may legitimately write a result.
struct OutputsWritable {
  OutputsWritable() { set_outputs_writable(true); }
  ~OutputsWritable() { set_outputs_writable(false); }
};

inline void on_segv(int sig, siginfo_t* info, void*) {
  const char* at = static_cast<const char*>(info->si_addr);
  const long page = sysconf(_SC_PAGESIZE);
  for (const auto& o : g_outputs) {
    char line[512];
    int n = 0;
    if (at >= o.base && at < o.base + o.bytes)
      n = std::snprintf(line, sizeof line,
                        "CUDA emulator: host code wrote the result buffer '%s' (byte %zu of %zu) "
                        "outside any kernel launch: in an emulated check the result must be "
                        "computed and written by kernel threads, not by host code or a copy "
                        "from host memory\n",
                        o.name, static_cast<size_t>(at - o.base), o.bytes);
    else if (at >= o.base + o.bytes && at < o.base + o.bytes + page)
      n = std::snprintf(line, sizeof line,
                        "CUDA emulator: a write %zu bytes past the end of the result buffer '%s' "
                        "(%zu bytes): mask the stores (i < n)\n",
                        static_cast<size_t>(at - o.base - o.bytes), o.name, o.bytes);
    if (n > 0) {
      (void)!write(2, line, static_cast<size_t>(std::min(n, int(sizeof line) - 1)));
      _exit(3);
    }
  }
  signal(sig, SIG_DFL);  // not a result buffer: the usual crash
  raise(sig);
}

// A result buffer of `n` values of T, all `fill`, that only kernel threads may write. Its end
// touches an inaccessible page (its start is 16-byte aligned, like cudaMalloc's), so a store past
// the end stops the test too.
template <typename T>
class KernelOutput {
 public:
  KernelOutput(size_t n, T fill, const char* name) : n_(n) {
    static const bool installed = [] {
      struct sigaction sa {};
      sa.sa_sigaction = on_segv;
      sa.sa_flags = SA_SIGINFO;
      return sigaction(SIGSEGV, &sa, nullptr) == 0;
    }();
    (void)installed;
    const size_t page = static_cast<size_t>(sysconf(_SC_PAGESIZE));
    const size_t bytes = std::max<size_t>(n * sizeof(T), 1);
    const size_t pages = (bytes + 16 + page - 1) / page + 1;  // + one guard page
    map_bytes_ = pages * page;
    map_ = static_cast<char*>(
        mmap(nullptr, map_bytes_, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0));
    if (map_ == MAP_FAILED) {
      std::fprintf(stderr, "CUDA emulator: emu::KernelOutput: mmap of %zu bytes failed\n",
                   map_bytes_);
      std::abort();
    }
    char* end = map_ + map_bytes_ - page;
    data_ =
        reinterpret_cast<T*>((reinterpret_cast<uintptr_t>(end - n * sizeof(T))) & ~uintptr_t{15});
    for (size_t i = 0; i < n; ++i) data_[i] = fill;
    mprotect(end, page, PROT_NONE);
    g_outputs.push_back({reinterpret_cast<char*>(data_), n * sizeof(T), name});
    set_outputs_writable(false);
  }
  ~KernelOutput() {
    for (size_t i = 0; i < g_outputs.size(); ++i)
      if (g_outputs[i].base == reinterpret_cast<char*>(data_))
        g_outputs.erase(g_outputs.begin() + i);
    munmap(map_, map_bytes_);
  }
  KernelOutput(const KernelOutput&) = delete;
  KernelOutput& operator=(const KernelOutput&) = delete;

  T* data() { return data_; }
  const T* data() const { return data_; }
  size_t size() const { return n_; }
  const T& operator[](size_t i) const { return data_[i]; }
  const T& back() const { return data_[n_ - 1]; }

 private:
  size_t n_;
  char* map_ = nullptr;
  size_t map_bytes_ = 0;
  T* data_ = nullptr;
};
}  // namespace emu

inline cudaError_t cudaMemsetAsync(void* p, int v, size_t n, cudaStream_t stream = nullptr) {
  if (n >= emu::kImpossibleBytes) return emu::error(cudaErrorInvalidValue);
  return emu::enqueue(stream, [=] {
    const emu::OutputsWritable writable;
    std::memset(p, v, n);
  });
}
inline cudaError_t cudaMemset(void* p, int v, size_t n) {
  return cudaMemsetAsync(p, v, n);
}
inline cudaError_t cudaMemcpyAsync(void* d, const void* s, size_t n, cudaMemcpyKind kind,
                                   cudaStream_t stream = nullptr) {
  if (n >= emu::kImpossibleBytes) return emu::error(cudaErrorInvalidValue);
  // A copy out of device memory may fill a result; a copy of a host array may not.
  const bool from_device = kind == cudaMemcpyDeviceToDevice || kind == cudaMemcpyDeviceToHost;
  return emu::enqueue(stream, [=] {
    if (from_device) emu::set_outputs_writable(true);
    if (n > 0) std::memmove(d, s, n);
    if (from_device) emu::set_outputs_writable(false);
  });
}
inline cudaError_t cudaMemcpy(void* d, const void* s, size_t n, cudaMemcpyKind k) {
  return cudaMemcpyAsync(d, s, n, k);
}
inline cudaError_t cudaGetDevice(int* d) {
  *d = 0;
  return cudaSuccess;
}
// One emulated device, cuda:0, with an H100's figures, so that code sizing its grid from the
// device sees a realistic GPU. Selecting any other device fails as on a one-GPU machine.
inline cudaError_t cudaGetDeviceCount(int* n) {
  *n = 1;
  return cudaSuccess;
}
inline cudaError_t cudaSetDevice(int d) {
  return d == 0 ? cudaSuccess : emu::error(cudaErrorInvalidDevice);
}
// CUDA's encoding, 1000 * major + 10 * minor: the emulator stands in for CUDA 12.4.
inline cudaError_t cudaRuntimeGetVersion(int* v) {
  *v = 12040;
  return cudaSuccess;
}
inline cudaError_t cudaDriverGetVersion(int* v) {
  *v = 12040;
  return cudaSuccess;
}
inline cudaError_t cudaDeviceGetAttribute(int* v, cudaDeviceAttr a, int d) {
  if (d != 0) return emu::error(cudaErrorInvalidDevice);
  switch (a) {
    case cudaDevAttrMultiProcessorCount:
      *v = 132;
      break;
    case cudaDevAttrWarpSize:
      *v = 32;
      break;
    case cudaDevAttrMemoryClockRate:
      *v = 2619000;  // kHz
      break;
    default:
      *v = 50 << 20;  // the L2 cache, bytes
  }
  return cudaSuccess;
}
// The fields of cudaDeviceProp that host code reads (the toolkit's struct has many more).
struct cudaDeviceProp {
  char name[256];
  size_t totalGlobalMem;
  size_t sharedMemPerBlock;
  int warpSize;
  int maxThreadsPerBlock;
  int major;
  int minor;
  int multiProcessorCount;
  int l2CacheSize;
  int memoryBusWidth;
  // The SM's limits (gtl/runtime/occupancy.h reads them).
  size_t sharedMemPerMultiprocessor;
  size_t sharedMemPerBlockOptin;
  size_t reservedSharedMemPerBlock;
  int maxThreadsPerMultiProcessor;
  int maxBlocksPerMultiProcessor;
  int regsPerMultiprocessor;
  int regsPerBlock;
};
inline cudaError_t cudaGetDeviceProperties(cudaDeviceProp* p, int d) {
  if (d != 0) return emu::error(cudaErrorInvalidDevice);
  *p = {};
  std::snprintf(p->name, sizeof p->name, "CPU emulator (H100 figures)");
  p->totalGlobalMem = emu::kDeviceBytes;
  p->sharedMemPerBlock = 48 << 10;
  p->warpSize = 32;
  p->maxThreadsPerBlock = 1024;
  p->major = 9;
  p->minor = 0;
  p->multiProcessorCount = 132;
  p->sharedMemPerMultiprocessor = 228 << 10;
  p->sharedMemPerBlockOptin = 227 << 10;
  p->reservedSharedMemPerBlock = 1 << 10;
  p->maxThreadsPerMultiProcessor = 2048;
  p->maxBlocksPerMultiProcessor = 32;
  p->regsPerMultiprocessor = 65536;
  p->regsPerBlock = 65536;
  p->l2CacheSize = 50 << 20;
  p->memoryBusWidth = 5120;
  return cudaSuccess;
}
inline cudaError_t cudaGetLastError() {
  const cudaError_t e = emu::g_last_error;
  emu::g_last_error = cudaSuccess;
  return e;
}
inline cudaError_t cudaPeekAtLastError() {
  return emu::g_last_error;
}
inline cudaError_t cudaDeviceSynchronize() {
  return emu::check_wait_allowed(nullptr, true);
}
inline cudaError_t cudaStreamCreateWithFlags(cudaStream_t* s, unsigned flags) {
  const std::lock_guard<std::mutex> lock(emu::g_capture_mutex);
  static uintptr_t created = 0;  // distinct non-null handles, never dereferenced
  *s = reinterpret_cast<cudaStream_t>(++created * 64);
  if ((flags & cudaStreamNonBlocking) == 0) emu::g_blocking_streams.push_back(*s);
  return cudaSuccess;
}
inline cudaError_t cudaStreamCreate(cudaStream_t* s) {
  return cudaStreamCreateWithFlags(s, cudaStreamDefault);
}
inline cudaError_t cudaStreamDestroy(cudaStream_t s) {
  const std::lock_guard<std::mutex> lock(emu::g_capture_mutex);
  auto& blocking = emu::g_blocking_streams;
  blocking.erase(std::remove(blocking.begin(), blocking.end(), s), blocking.end());
  return cudaSuccess;
}
inline cudaError_t cudaStreamSynchronize(cudaStream_t s) {
  return emu::check_wait_allowed(s, false);
}
// Every call completes before it returns: a stream has never any work left.
inline cudaError_t cudaStreamQuery(cudaStream_t) {
  return cudaSuccess;
}
inline cudaError_t cudaStreamWaitEvent(cudaStream_t, cudaEvent_t, unsigned = 0) {
  return cudaSuccess;
}
// An event holds the host time it was recorded at.
// An event holds the host time it was recorded at (ms), NaN until it is recorded.
inline cudaError_t cudaEventCreate(cudaEvent_t* e) {
  *e = reinterpret_cast<cudaEvent_t>(new double(std::nan("")));
  return cudaSuccess;
}
// Timing or not, an event is the same host clock reading here.
inline cudaError_t cudaEventCreateWithFlags(cudaEvent_t* e, unsigned) {
  return cudaEventCreate(e);
}
inline cudaError_t cudaEventDestroy(cudaEvent_t e) {
  delete reinterpret_cast<double*>(e);
  return cudaSuccess;
}
inline cudaError_t cudaEventRecord(cudaEvent_t e, cudaStream_t stream = nullptr) {
  return emu::enqueue(stream, [e] {
    *reinterpret_cast<double*>(e) = std::chrono::duration<double, std::milli>(
                                        std::chrono::steady_clock::now().time_since_epoch())
                                        .count();
  });
}
inline cudaError_t cudaEventSynchronize(cudaEvent_t) {
  return cudaSuccess;
}
inline cudaError_t cudaEventQuery(cudaEvent_t) {
  return cudaSuccess;
}
// As on a GPU, an event that was never recorded has no time: cudaErrorInvalidResourceHandle.
inline cudaError_t cudaEventElapsedTime(float* ms, cudaEvent_t begin, cudaEvent_t end) {
  const double b = *reinterpret_cast<double*>(begin), e = *reinterpret_cast<double*>(end);
  if (std::isnan(b) || std::isnan(e)) return emu::error(cudaErrorInvalidResourceHandle);
  *ms = static_cast<float>(e - b);
  return cudaSuccess;
}
// ---- CUDA graphs (see "stream capture" above for what is recorded and what a capture refuses).
inline cudaError_t cudaStreamBeginCapture(cudaStream_t s, cudaStreamCaptureMode mode) {
  // The legacy stream cannot capture; the core captures in global mode only.
  if (s == nullptr || mode != cudaStreamCaptureModeGlobal)
    return emu::error(cudaErrorStreamCaptureUnsupported);
  const std::lock_guard<std::mutex> lock(emu::g_capture_mutex);
  if (emu::capture_of(s) != nullptr) return emu::error(cudaErrorIllegalState);
  emu::g_captures.push_back({s, new CUgraph_st});
  return cudaSuccess;
}
inline cudaError_t cudaStreamEndCapture(cudaStream_t s, cudaGraph_t* graph) {
  const std::lock_guard<std::mutex> lock(emu::g_capture_mutex);
  emu::Capture* c = emu::capture_of(s);
  if (c == nullptr) return emu::error(cudaErrorIllegalState);
  const emu::Capture ended = *c;
  emu::g_captures.erase(emu::g_captures.begin() + (c - emu::g_captures.data()));
  if (ended.invalidated) {
    delete ended.graph;
    *graph = nullptr;
    return emu::error(cudaErrorStreamCaptureInvalidated);
  }
  *graph = ended.graph;
  return cudaSuccess;
}
inline cudaError_t cudaStreamIsCapturing(cudaStream_t s, cudaStreamCaptureStatus* status) {
  const std::lock_guard<std::mutex> lock(emu::g_capture_mutex);
  const emu::Capture* c = emu::capture_of(s);
  *status = c == nullptr     ? cudaStreamCaptureStatusNone
            : c->invalidated ? cudaStreamCaptureStatusInvalidated
                             : cudaStreamCaptureStatusActive;
  return cudaSuccess;
}
// The number of nodes of a graph (the emulator's graphs are one chain: every node is a root or
// follows the one before). With nodes == nullptr only the count is written, as the runtime does.
typedef struct CUgraphNode_st* cudaGraphNode_t;
inline cudaError_t cudaGraphGetNodes(cudaGraph_t graph, cudaGraphNode_t* nodes, size_t* count) {
  if (graph == nullptr || count == nullptr || nodes != nullptr)
    return emu::error(cudaErrorInvalidValue);
  *count = graph->nodes.size();
  return cudaSuccess;
}
inline cudaError_t cudaGraphInstantiate(cudaGraphExec_t* exec, cudaGraph_t graph,
                                        unsigned long long = 0) {
  if (graph == nullptr) return emu::error(cudaErrorInvalidValue);
  *exec = new CUgraphExec_st{graph->nodes};
  return cudaSuccess;
}
// Runs the graph's nodes in order (or records them, when `s` is itself capturing).
inline cudaError_t cudaGraphLaunch(cudaGraphExec_t exec, cudaStream_t s) {
  if (exec == nullptr) return emu::error(cudaErrorInvalidValue);
  return emu::enqueue(s, [exec] {
    for (const auto& node : exec->nodes) node();
  });
}
inline cudaError_t cudaGraphExecDestroy(cudaGraphExec_t exec) {
  delete exec;
  return cudaSuccess;
}
inline cudaError_t cudaGraphDestroy(cudaGraph_t graph) {
  delete graph;
  return cudaSuccess;
}
inline const char* cudaGetErrorName(cudaError_t e) {
  switch (e) {
    case cudaSuccess:
      return "cudaSuccess";
    case cudaErrorInvalidValue:
      return "cudaErrorInvalidValue";
    case cudaErrorMemoryAllocation:
      return "cudaErrorMemoryAllocation";
    case cudaErrorInvalidConfiguration:
      return "cudaErrorInvalidConfiguration";
    case cudaErrorInvalidDevice:
      return "cudaErrorInvalidDevice";
    case cudaErrorNotReady:
      return "cudaErrorNotReady";
    case cudaErrorInvalidResourceHandle:
      return "cudaErrorInvalidResourceHandle";
    case cudaErrorIllegalState:
      return "cudaErrorIllegalState";
    case cudaErrorStreamCaptureUnsupported:
      return "cudaErrorStreamCaptureUnsupported";
    case cudaErrorStreamCaptureInvalidated:
      return "cudaErrorStreamCaptureInvalidated";
    case cudaErrorStreamCaptureImplicit:
      return "cudaErrorStreamCaptureImplicit";
  }
  return "cudaErrorUnknown";
}
inline const char* cudaGetErrorString(cudaError_t e) {
  switch (e) {
    case cudaSuccess:
      return "no error";
    case cudaErrorInvalidValue:
      return "invalid argument";
    case cudaErrorMemoryAllocation:
      return "out of memory";
    case cudaErrorInvalidConfiguration:
      return "invalid configuration argument";
    case cudaErrorInvalidResourceHandle:
      return "invalid resource handle";
    case cudaErrorStreamCaptureUnsupported:
      return "operation not permitted when stream is capturing";
    case cudaErrorStreamCaptureInvalidated:
      return "operation failed due to a previous error during capture";
    case cudaErrorStreamCaptureImplicit:
      return "operation would make the legacy stream depend on a capturing blocking stream";
    default:
      return "an error (CPU emulator)";
  }
}

namespace emu {

enum class State { kRun, kBlockBarrier, kWarpBarrier, kDone };

// A warp-collective call (the warp matrix functions of mma.h): its name and where the kernel makes
// it. All 32 lanes of the warp must make the same call together (release_warp checks).
struct WarpCall {
  const char* name;
  std::source_location where;
};

struct Fiber {
  ucontext_t start;  // used once, to enter the fiber on its own stack
  void* env[5];      // every later switch: __builtin_setjmp/longjmp, no system call
  bool started = false;
  uint3 tid;
  State state = State::kRun;
  const WarpCall* call = nullptr;  // the warp-collective call it is in, if any
};

struct Block {
  void* scheduler[5];
  std::vector<Fiber> fibers;
  int current = 0;
  std::vector<uint64_t> lanes;  // the values lanes hand each other in a shuffle
  std::function<void()> body;
};

inline Block* g_block = nullptr;
inline std::mutex g_launch_mutex;                      // held by a launch while its blocks run
inline std::vector<std::unique_ptr<char[]>> g_stacks;  // reused by every block, never zeroed
struct FreeMemory {
  void operator()(void* p) const { std::free(p); }
};
// extern __shared__ arrays point here: 256-byte aligned (wmma tiles in it need 32), zeroed.
inline std::unique_ptr<float4, FreeMemory> g_dynamic_shared;
constexpr size_t kStackBytes = 64 * 1024;

[[noreturn]] inline void fail(const std::string& what) {
  std::fprintf(stderr,
               "CUDA emulator: %s\n  at block (%u, %u, %u), thread (%u, %u, %u); on a GPU this "
               "hangs, fails the launch or gives undefined results\n",
               what.c_str(), blockIdx.x, blockIdx.y, blockIdx.z, threadIdx.x, threadIdx.y,
               threadIdx.z);
  std::abort();
}

inline void* dynamic_shared() {
  return g_dynamic_shared.get();
}

// AddressSanitizer (emulated tests use it: an out-of-bounds access is what compute-sanitizer
// reports on a GPU) must be told when execution moves to another stack, or it takes the fiber
// stacks for a corrupted one. Without the sanitizer these compile to nothing.
// The switches themselves are neither instrumented nor intercepted: ASan treats every longjmp
// as leaving the stack for good and unpoisons all of it (a system call and a 64 KiB clear per
// switch, most of an emulated test's time), so they use GCC's __builtin_setjmp/__builtin_longjmp
// (inline code, no library call) in functions built without ASan. The fiber annotations keep
// ASan right about which stack runs.
#if defined(__SANITIZE_ADDRESS__)
#define EMU_NO_ASAN __attribute__((no_sanitize_address))
inline const void* g_scheduler_stack = nullptr;  // the scheduler's (the test's) stack
inline size_t g_scheduler_stack_size = 0;
inline void enter_fiber_stack(void** save, int i) {
  __sanitizer_start_switch_fiber(save, g_stacks[i].get(), kStackBytes);
}
inline void leave_fiber_stack(void** save) {
  __sanitizer_start_switch_fiber(save, g_scheduler_stack, g_scheduler_stack_size);
}
inline void arrived_on_fiber(void* save) {
  __sanitizer_finish_switch_fiber(save, &g_scheduler_stack, &g_scheduler_stack_size);
}
inline void arrived_on_scheduler(void* save) {
  __sanitizer_finish_switch_fiber(save, nullptr, nullptr);
}
#else
#define EMU_NO_ASAN
inline void enter_fiber_stack(void**, int) {}
inline void leave_fiber_stack(void**) {}
inline void arrived_on_fiber(void*) {}
inline void arrived_on_scheduler(void*) {}
#endif

// Resumes the context saved in `env` by __builtin_setjmp, which GCC wants in another function.
[[noreturn]] EMU_NO_ASAN __attribute__((noinline)) inline void jump_to(void** env) {
  __builtin_longjmp(env, 1);
}

EMU_NO_ASAN inline void yield(State s) {
  Fiber& f = g_block->fibers[g_block->current];
  f.state = s;
  void* save = nullptr;
  leave_fiber_stack(&save);
  if (__builtin_setjmp(f.env) == 0) jump_to(g_block->scheduler);
  arrived_on_fiber(save);
}

EMU_NO_ASAN inline void fiber_main() {
  arrived_on_fiber(nullptr);
  g_block->body();
  g_block->fibers[g_block->current].state = State::kDone;
  leave_fiber_stack(nullptr);  // nullptr: this fiber's stack is done with
  jump_to(g_block->scheduler);
}

// The order threads run in between barriers. Each order hides some missing barriers and exposes
// others, so by default launches take them in turn (kRotate): a test that launches a kernel a few
// times tries all three. GTL_EMULATOR_SCHEDULE=forward|reverse|warps fixes one.
//   kForward     thread 0, 1, 2, ... each up to its next barrier or shuffle;
//   kReverse     the highest thread first;
//   kWarpsAhead  warp 0 runs through its shuffles up to a __syncthreads before warp 1 starts,
//                as a warp that is scheduled early on a GPU would (a missing barrier between
//                two uses of the same shared memory then shows).
enum class Schedule { kForward, kReverse, kWarpsAhead, kRotate };

inline Schedule schedule_for_next_launch() {
  static const Schedule chosen = [] {
    const char* v = std::getenv("GTL_EMULATOR_SCHEDULE");
    const std::string s = v ? v : "rotate";
    if (s == "forward") return Schedule::kForward;
    if (s == "reverse") return Schedule::kReverse;
    if (s == "warps") return Schedule::kWarpsAhead;
    if (s != "rotate") fail("GTL_EMULATOR_SCHEDULE must be forward, reverse, warps or rotate");
    return Schedule::kRotate;
  }();
  static unsigned launches = 0;
  if (chosen != Schedule::kRotate) return chosen;
  return static_cast<Schedule>(launches++ % 3);
}

inline std::string describe(const WarpCall& call) {
  const std::string file = call.where.file_name();
  return std::string(call.name) + " (" + file.substr(file.find_last_of('/') + 1) + ":" +
         std::to_string(call.where.line()) + ")";
}

// Stops the program unless, when some lane of warp w waits in a warp-collective call, all 32 lanes
// wait in that same call (a GPU hangs or computes garbage otherwise).
inline void check_warp_call(const Block& block, int w, int end) {
  int first = -1;
  for (int l = w * 32; l < end && first < 0; ++l)
    if (block.fibers[l].state == State::kWarpBarrier && block.fibers[l].call) first = l;
  if (first < 0) return;
  const WarpCall& call = *block.fibers[first].call;
  for (int l = w * 32; l < w * 32 + 32; ++l) {
    const WarpCall* other = l < end ? block.fibers[l].call : nullptr;
    std::string why;
    if (l >= end)
      why = "does not exist (the block's last warp is partial)";
    else if (block.fibers[l].state == State::kDone)
      why = "has exited";
    else if (other == nullptr)
      why = "waits at a shuffle or __syncwarp";
    else if (std::strcmp(other->name, call.name) != 0 || other->where.line() != call.where.line() ||
             other->where.column() != call.where.column() ||
             std::strcmp(other->where.file_name(), call.where.file_name()) != 0)
      why = "is in " + describe(*other);
    else
      continue;
    threadIdx = block.fibers[first].tid;
    fail(describe(call) +
         " is warp-collective: all 32 lanes of the warp must make the call "
         "together, but lane " +
         std::to_string(l % 32) + " " + why);
  }
}

// Releases warp w if all its live lanes wait at a shuffle or warp-collective call; returns whether
// it did.
inline bool release_warp(Block& block, int w) {
  const int n = static_cast<int>(block.fibers.size());
  const int end = std::min(n, w * 32 + 32);
  int live = 0, waiting = 0;
  for (int l = w * 32; l < end; ++l) {
    live += block.fibers[l].state != State::kDone;
    waiting += block.fibers[l].state == State::kWarpBarrier;
  }
  if (waiting == 0 || waiting != live) return false;
  check_warp_call(block, w, end);
  if (live != end - w * 32) {
    threadIdx = block.fibers[w * 32].tid;
    fail("a warp shuffle with a full mask while some lanes of the warp have exited");
  }
  for (int l = w * 32; l < end; ++l) block.fibers[l].state = State::kRun;
  return true;
}

inline bool release_warps(Block& block) {
  bool released = false;
  for (int w = 0; w * 32 < static_cast<int>(block.fibers.size()); ++w)
    released |= release_warp(block, w);
  return released;
}

// Runs fiber i until its next barrier or its end. A function of its own: no local variable of the
// caller lives across the __builtin_setjmp.
EMU_NO_ASAN __attribute__((noinline)) inline void run_until_it_waits(Block& block, int i) {
  Fiber& f = block.fibers[i];
  block.current = i;
  threadIdx = f.tid;
  void* save = nullptr;
  enter_fiber_stack(&save, i);
  if (__builtin_setjmp(block.scheduler) == 0) {
    if (!f.started) {
      f.started = true;
      setcontext(&f.start);
    }
    jump_to(f.env);
  }
  arrived_on_scheduler(save);
}

// Runs every runnable thread once, up to its next barrier, in the schedule's order; in kWarpsAhead
// a warp also goes through its shuffles before the next warp starts. Returns whether any ran.
inline bool run_pass(Block& block, Schedule schedule) {
  const int n = static_cast<int>(block.fibers.size());
  bool ran = false;
  if (schedule == Schedule::kWarpsAhead) {
    for (int w = 0; w * 32 < n; ++w) {
      do {
        for (int i = w * 32; i < std::min(n, w * 32 + 32); ++i) {
          if (block.fibers[i].state != State::kRun) continue;
          run_until_it_waits(block, i);
          ran = true;
        }
      } while (release_warp(block, w));
    }
    return ran;
  }
  for (int k = 0; k < n; ++k) {
    const int i = schedule == Schedule::kReverse ? n - 1 - k : k;
    if (block.fibers[i].state != State::kRun) continue;
    run_until_it_waits(block, i);
    ran = true;
  }
  return ran;
}

inline void run_block(const std::function<void()>& body, Schedule schedule) {
  Block block;
  block.body = body;
  const int n = static_cast<int>(blockDim.x * blockDim.y * blockDim.z);
  block.fibers.resize(n);
  block.lanes.resize(n + 32);
  for (int i = 0; i < n; ++i) {
    Fiber& f = block.fibers[i];
    f.tid = {i % blockDim.x, (i / blockDim.x) % blockDim.y, i / (blockDim.x * blockDim.y)};
    while (static_cast<int>(g_stacks.size()) <= i) g_stacks.emplace_back(new char[kStackBytes]);
    getcontext(&f.start);
    f.start.uc_stack.ss_sp = g_stacks[i].get();
    f.start.uc_stack.ss_size = kStackBytes;
    f.start.uc_link = nullptr;
    makecontext(&f.start, fiber_main, 0);
  }
  g_block = &block;
  for (;;) {
    const bool ran = run_pass(block, schedule);
    int done = 0, at_barrier = 0;
    for (const Fiber& f : block.fibers) {
      done += f.state == State::kDone;
      at_barrier += f.state == State::kBlockBarrier;
    }
    if (done == n) break;
    if (release_warps(block)) continue;
    if (at_barrier > 0 && at_barrier + done == n) {
      if (done > 0)
        fail("__syncthreads() reached by some threads of the block after others exited");
      for (Fiber& f : block.fibers) f.state = State::kRun;
      continue;
    }
    if (!ran)
      fail(
          "deadlock: threads wait at different barriers (a __syncthreads or shuffle in divergent "
          "code)");
  }
  g_block = nullptr;
}

// emu::Launcher(kernel, grid, block, smem, stream)(args...): what kernel<<<...>>>(args...) becomes.
template <typename... P>
struct Launcher {
  void (*kernel)(P...);
  dim3 grid, block;
  size_t shared_bytes;
  cudaStream_t stream;
  Launcher(void (*k)(P...), dim3 g, dim3 b, size_t smem = 0, cudaStream_t s = nullptr)
      : kernel(k), grid(g), block(b), shared_bytes(smem), stream(s) {}

  // A launch a GPU rejects does not run; cudaGetLastError() then returns the error, as on a GPU.
  // The emulator also says so on stderr, with the sizes, since unchecked it only shows as output
  // that was never written.
  bool rejected() const {
    const char* why = nullptr;
    if (grid.x == 0 || grid.y == 0 || grid.z == 0 || block.x == 0 || block.y == 0 || block.z == 0)
      why = "an empty grid or block";
    else if (uint64_t{block.x} * block.y * block.z > 1024)  // 64 bits: 65536 x 65536 is not 0
      why = "more than 1024 threads per block";
    else if (block.z > 64)
      why = "blockDim.z above 64";
    else if (grid.x > 2147483647u)  // a negative block count converted to unsigned, say
      why = "gridDim.x above 2^31 - 1";
    else if (grid.y > 65535 || grid.z > 65535)
      why = "gridDim.y or gridDim.z above 65535";
    if (why == nullptr) return false;
    std::fprintf(stderr,
                 "CUDA emulator: launch of grid (%u, %u, %u) x block (%u, %u, %u) rejected: %s "
                 "(cudaErrorInvalidConfiguration, as a GPU would)\n",
                 grid.x, grid.y, grid.z, block.x, block.y, block.z, why);
    error(cudaErrorInvalidConfiguration);
    return true;
  }

  // The arguments are converted as a launch would and kept by value: a launch that a stream
  // capture records runs at each replay with the values it was given at capture.
  template <typename... A>
  void operator()(A&&... args) const {
    if (rejected()) return;
    std::tuple<P...> params(static_cast<P>(args)...);
    (void)enqueue(stream, [launch = *this, params = std::move(params)] { launch.run(params); });
  }

  void run(const std::tuple<P...>& params) const {
    // One launch at a time in the process: the block state (threadIdx, shared memory) is global.
    // Host threads that launch at once (ranks of an in-process communicator) take turns.
    const std::lock_guard<std::mutex> one_at_a_time(g_launch_mutex);
    // A new buffer of this launch's size, not an earlier launch's larger one kept: AddressSanitizer
    // then stops a kernel that uses more dynamic shared memory than its launch gave.
    const size_t bytes = (shared_bytes + sizeof(float4) - 1) / sizeof(float4) * sizeof(float4);
    void* shared = nullptr;
    if (posix_memalign(&shared, 256, bytes) != 0) fail("no host memory for dynamic shared memory");
    if (bytes > 0) std::memset(shared, 0, bytes);
    g_dynamic_shared.reset(static_cast<float4*>(shared));
    const Schedule schedule = schedule_for_next_launch();
    gridDim = grid;
    blockDim = block;
    const OutputsWritable writable;  // kernel threads write the results (KernelOutput)
    for (unsigned z = 0; z < grid.z; ++z)
      for (unsigned y = 0; y < grid.y; ++y)
        for (unsigned x = 0; x < grid.x; ++x) {
          blockIdx = {x, y, z};
          run_block([&] { std::apply(kernel, params); }, schedule);
        }
  }
};

// A shuffle: every lane publishes its value, the warp meets, each lane reads its source lane's
// value, and the warp meets again so that no lane overwrites a value another has yet to read.
// The warp is cut into segments of `width` lanes; source() gets the first and last lane of the
// calling lane's segment, and returns the lane itself where CUDA keeps the lane's own value.
template <typename T>
T shuffle(unsigned mask, T v, int (*source)(int lane, int arg, int first, int last), int arg,
          int width) {
  static_assert(sizeof(T) <= sizeof(uint64_t), "shuffles move 4- or 8-byte values");
  if (mask != 0xffffffffu) fail("shuffle masks other than 0xffffffff are not emulated");
  if (width < 1 || width > 32 || (width & (width - 1)) != 0)
    fail("a shuffle width that is not a power of 2 from 1 to 32 (undefined in CUDA)");
  Block& b = *g_block;
  const int me =
      static_cast<int>(threadIdx.x + blockDim.x * (threadIdx.y + blockDim.y * threadIdx.z));
  const int lane = me % 32;
  std::memcpy(&b.lanes[me], &v, sizeof(T));
  yield(State::kWarpBarrier);
  const int first = lane & ~(width - 1);
  const int src = source(lane, arg, first, first + width - 1);
  T out = v;
  if (src >= 0 && src < 32 && me - lane + src < static_cast<int>(b.fibers.size()))
    std::memcpy(&out, &b.lanes[me - lane + src], sizeof(T));
  yield(State::kWarpBarrier);
  return out;
}

// A warp-collective call (mma.h's wmma functions): each lane publishes `mine`, the warp meets
// (all 32 lanes in the same call, or the program stops: check_warp_call), `body(warp, lane)` runs
// with warp[l] pointing to lane l's published value, and the warp meets again before any lane goes
// on, so that no lane changes what another is still reading.
template <typename T, typename Body>
void warp_collective(const WarpCall& call, const T& mine, Body body) {
  Block& b = *g_block;
  const int me =
      static_cast<int>(threadIdx.x + blockDim.x * (threadIdx.y + blockDim.y * threadIdx.z));
  const int lane = me % 32;
  Fiber& f = b.fibers[me];
  f.call = &call;
  b.lanes[me] = reinterpret_cast<uintptr_t>(&mine);
  yield(State::kWarpBarrier);
  const T* warp[32];
  for (int l = 0; l < 32; ++l) warp[l] = reinterpret_cast<const T*>(b.lanes[me - lane + l]);
  body(warp, lane);
  yield(State::kWarpBarrier);
  f.call = nullptr;
}

}  // namespace emu

inline void __syncthreads() {
  emu::yield(emu::State::kBlockBarrier);
}
inline void __syncwarp(unsigned mask = 0xffffffffu) {
  if (mask != 0xffffffffu) emu::fail("__syncwarp masks other than 0xffffffff are not emulated");
  emu::yield(emu::State::kWarpBarrier);
}
template <typename T>
T __shfl_xor_sync(unsigned mask, T v, int lane_mask, int width = 32) {
  return emu::shuffle(
      mask, v, [](int lane, int m, int, int last) { return (lane ^ m) <= last ? lane ^ m : lane; },
      lane_mask, width);
}
template <typename T>
T __shfl_down_sync(unsigned mask, T v, unsigned delta, int width = 32) {
  return emu::shuffle(
      mask, v, [](int lane, int d, int, int last) { return lane + d <= last ? lane + d : lane; },
      static_cast<int>(delta), width);
}
template <typename T>
T __shfl_up_sync(unsigned mask, T v, unsigned delta, int width = 32) {
  return emu::shuffle(
      mask, v, [](int lane, int d, int first, int) { return lane - d >= first ? lane - d : lane; },
      static_cast<int>(delta), width);
}
template <typename T>
T __shfl_sync(unsigned mask, T v, int src_lane, int width = 32) {
  return emu::shuffle(
      mask, v, [](int, int src, int first, int last) { return first + (src & (last - first)); },
      src_lane, width);
}
