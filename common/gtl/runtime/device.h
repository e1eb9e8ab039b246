// Devices: where a tensor lives and where its ops run. `cpu` or `cuda:N`.
//
// Code written against gtl::Device runs on either backend: pick default_device() and fall back
// to the CPU when no GPU is present (device-agnostic code, as in lab 01).
#pragma once

#include <cstdint>
#include <ostream>
#include <string>

namespace gtl {

enum class DeviceType : uint8_t { CPU, CUDA };

class Device {
 public:
  constexpr Device() = default;  // the CPU
  constexpr Device(DeviceType type, int index) : type_(type), index_(index) {}
  static constexpr Device cpu() { return {DeviceType::CPU, 0}; }
  static constexpr Device cuda(int index = 0) { return {DeviceType::CUDA, index}; }
  // Parses "cpu", "cuda" or "cuda:N"; throws gtl::Error on anything else.
  static Device parse(const std::string& text);

  DeviceType type() const { return type_; }
  int index() const { return index_; }
  bool is_cpu() const { return type_ == DeviceType::CPU; }
  bool is_cuda() const { return type_ == DeviceType::CUDA; }
  std::string str() const;

  friend bool operator==(const Device&, const Device&) = default;

 private:
  DeviceType type_ = DeviceType::CPU;
  int index_ = 0;
};

std::ostream& operator<<(std::ostream& os, const Device& device);

// True when this build has the CUDA backend and at least one GPU is visible.
bool cuda_available();
// Number of visible GPUs; 0 in a CPU-only build or when the driver finds none.
int cuda_device_count();
// cuda:0 when a GPU is available, otherwise cpu.
Device default_device();
// Why cuda_available() is false, in words a student can act on ("no GPU on this machine (no
// NVIDIA driver found)", "no GPU support in this build ...", "no usable GPU: <CUDA error>").
std::string cuda_unavailable_reason();

struct DeviceProperties {
  std::string name;
  int index = 0;
  int compute_major = 0, compute_minor = 0;
  int multiprocessors = 0;
  int64_t total_memory_bytes = 0;
  int64_t l2_cache_bytes = 0;
  int64_t shared_memory_per_block_bytes = 0;
  int max_threads_per_block = 0;
  int warp_size = 0;
  int memory_bus_width_bits = 0;
  int memory_clock_khz = 0;
  // Theoretical DRAM bandwidth: 2 (double data rate) * clock * bus width.
  double peak_memory_bandwidth_gbs() const;
};

DeviceProperties device_properties(int index);
// "CUDA runtime 13.0, driver 13.0" or "built without CUDA".
std::string cuda_version_string();

// Makes `device` current for the guard's lifetime and restores the previous device after.
// A CPU device leaves the current GPU untouched.
class DeviceGuard {
 public:
  explicit DeviceGuard(Device device);
  ~DeviceGuard();
  DeviceGuard(const DeviceGuard&) = delete;
  DeviceGuard& operator=(const DeviceGuard&) = delete;

 private:
  int previous_ = -1;
};

}  // namespace gtl
