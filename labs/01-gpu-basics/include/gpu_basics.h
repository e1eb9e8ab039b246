// Lab 01, GPU basics: the functions you implement, one TODO each.
//
// This header is part of the pristine lab (labs/01-gpu-basics/include): do not edit it. Your
// files are in starter/01-gpu-basics/; the map from TODO to file and test is in the handout,
// labs/01-gpu-basics/README.md.
//
// Functions taking or returning device pointers exist only in CUDA builds (GTL_WITH_CUDA).
#pragma once

#include <cstdint>
#include <string>

#include "gtl/runtime/device.h"
#include "gtl/runtime/stream.h"

namespace lab01 {

// ---- TODO 1: devices (device_select.cpp) --------------------------------------------------------
// "auto": cuda:0 when a GPU is usable, else cpu. "cpu": cpu. "cuda" / "cuda:N": that GPU, or a
// gtl::Error saying it does not exist ("cuda:3 requested but only 1 GPU is visible").
gtl::Device choose_device(const std::string& request);
// One line about GPU `index`: "<name>: <SMs> SMs, <memory> GiB, <peak bandwidth> GB/s, sm_<cc>".
std::string describe_device(int index);

// ---- TODO 7: the same vector operation on the CPU (vector_add_cpu.cpp) --------------------------
// c[i] = a[i] + b[i] for i < n.
void vector_add_cpu(const float* a, const float* b, float* c, int64_t n);

#ifdef GTL_WITH_CUDA
// ---- TODO 3: device memory and a vector-add kernel (vector_add.cu) ------------------------------
// Launches your kernel on `stream` for device pointers a, b, c: c[i] = a[i] + b[i], any n >= 0,
// with a fixed-size grid and a grid-stride loop. Returns without waiting for the GPU.
void vector_add_device(const float* a, const float* b, float* c, int64_t n, cudaStream_t stream);
// The whole round trip for host arrays: allocate device memory, copy a and b to the device,
// launch, copy c back, free; every CUDA call checked with LAB_CHECK.
void vector_add_gpu(const float* a, const float* b, float* c, int64_t n);

// ---- TODO 4: timing GPU work (event_timing.cu) --------------------------------------------------
struct LaunchTiming {
  double host_ms_without_sync;  // host clock around `repeats` launches, no synchronisation
  double host_ms_with_sync;     // host clock around the launches and a device synchronise
  float event_ms;               // CUDA events recorded around the launches
};
// Times `repeats` launches of vector_add_device on device arrays of n floats.
LaunchTiming time_vector_add(int64_t n, int repeats);

// ---- TODO 5: pageable vs pinned host memory (transfer_bandwidth.cu) -----------------------------
// 5a: `bytes` of host memory, page-locked (pinned) or ordinary pageable memory; free_host releases
// what allocate_host returned with the same `pinned`. The benchmarks copy from these buffers.
void* allocate_host(int64_t bytes, bool pinned);
void free_host(void* ptr, bool pinned);
// 5b: bandwidth in GB/s (1e9 bytes per second) of copying `bytes` between the host and the device,
// host memory pinned or pageable, host-to-device or device-to-host, timed with events over
// `repeats` copies.
double copy_bandwidth_gbs(int64_t bytes, bool pinned, bool host_to_device, int repeats);

// ---- TODO 6: overlapping copies and compute with streams (stream_pipeline.cu) -------------------
// out[i] = alpha * in[i] for pinned host arrays of n floats, through the GPU: device buffers d_in,
// d_out of n floats are provided. scale_serial copies everything in, computes, copies everything
// out (provided, the baseline); scale_pipelined splits the work into `chunks` pieces and gives
// each its own stream so that the copy of one chunk overlaps the compute of another. Both return
// when out is complete on the host.
void scale_serial(const float* in, float* out, float* d_in, float* d_out, int64_t n, float alpha);
void scale_pipelined(const float* in, float* out, float* d_in, float* d_out, int64_t n, float alpha,
                     int chunks);
#endif

}  // namespace lab01
