#include "gtl/runtime/device.h"

#include "gtl/runtime/error.h"

#ifdef GTL_WITH_CUDA
#include "gtl/runtime/cuda_check.h"
#endif

namespace gtl {

Device Device::parse(const std::string& text) {
  if (text == "cpu") return cpu();
  if (text == "cuda") return cuda(0);
  if (text.rfind("cuda:", 0) == 0 && text.size() > 5) {
    std::size_t used = 0;
    int index = -1;
    try {
      index = std::stoi(text.substr(5), &used);
    } catch (const std::exception&) {
    }
    if (used == text.size() - 5 && index >= 0) return cuda(index);
  }
  throw Error("unknown device '" + text + "': expected cpu, cuda or cuda:N");
}

std::string Device::str() const {
  return is_cpu() ? "cpu" : "cuda:" + std::to_string(index_);
}

std::ostream& operator<<(std::ostream& os, const Device& device) {
  return os << device.str();
}

double DeviceProperties::peak_memory_bandwidth_gbs() const {
  return 2.0 * memory_clock_khz * 1e3 * (memory_bus_width_bits / 8.0) / 1e9;
}

Device default_device() {
  return cuda_available() ? Device::cuda(0) : Device::cpu();
}
bool cuda_available() {
  return cuda_device_count() > 0;
}

#ifdef GTL_WITH_CUDA

int cuda_device_count() {
  // Asked on every op's CPU/GPU decision, so ask the driver once: the count cannot change
  // while the process runs.
  static const int count = [] {
    int n = 0;
    if (cudaGetDeviceCount(&n) != cudaSuccess) {
      (void)cudaGetLastError();
      return 0;
    }
    return n;
  }();
  return count;
}

std::string cuda_unavailable_reason() {
  int count = 0;
  cudaError_t e = cudaGetDeviceCount(&count);
  (void)cudaGetLastError();
  if (e != cudaSuccess) {
    // No NVIDIA driver at all reads as "driver version is insufficient", which sends students to
    // update a driver they do not need: say plainly that this machine has no GPU.
    int driver = 0;
    if (cudaDriverGetVersion(&driver) != cudaSuccess || driver == 0) {
      (void)cudaGetLastError();
      return "no GPU on this machine (no NVIDIA driver found)";
    }
    return std::string("no usable GPU: ") + cudaGetErrorString(e) + " (driver " +
           std::to_string(driver / 1000) + "." + std::to_string(driver % 1000 / 10) + ")";
  }
  if (count == 0) return "no GPU on this machine (the NVIDIA driver reports 0 GPUs)";
  return "";
}

DeviceProperties device_properties(int index) {
  GTL_CHECK(
      index >= 0 && index < cuda_device_count(),
      "device_properties: no device cuda:" << index << " (" << cuda_device_count() << " visible)");
  cudaDeviceProp p{};
  GTL_CUDA_CHECK(cudaGetDeviceProperties(&p, index));
  DeviceProperties out;
  out.name = p.name;
  out.index = index;
  out.compute_major = p.major;
  out.compute_minor = p.minor;
  out.multiprocessors = p.multiProcessorCount;
  out.total_memory_bytes = static_cast<int64_t>(p.totalGlobalMem);
  out.l2_cache_bytes = p.l2CacheSize;
  out.shared_memory_per_block_bytes = static_cast<int64_t>(p.sharedMemPerBlock);
  out.max_threads_per_block = p.maxThreadsPerBlock;
  out.warp_size = p.warpSize;
  out.memory_bus_width_bits = p.memoryBusWidth;
  // CUDA 13 removed cudaDeviceProp::memoryClockRate; the attribute still exists.
  GTL_CUDA_CHECK(cudaDeviceGetAttribute(&out.memory_clock_khz, cudaDevAttrMemoryClockRate, index));
  return out;
}

std::string cuda_version_string() {
  int runtime = 0, driver = 0;
  GTL_CUDA_CHECK(cudaRuntimeGetVersion(&runtime));
  if (cudaDriverGetVersion(&driver) != cudaSuccess) (void)cudaGetLastError();
  auto fmt = [](int v) { return std::to_string(v / 1000) + "." + std::to_string(v % 1000 / 10); };
  return "CUDA runtime " + fmt(runtime) + ", driver " + (driver ? fmt(driver) : "none");
}

DeviceGuard::DeviceGuard(Device device) {
  if (!device.is_cuda()) return;
  GTL_CUDA_CHECK(cudaGetDevice(&previous_));
  if (previous_ != device.index()) GTL_CUDA_CHECK(cudaSetDevice(device.index()));
}

DeviceGuard::~DeviceGuard() {
  if (previous_ >= 0) (void)cudaSetDevice(previous_);
}

#else  // CPU-only build

int cuda_device_count() {
  return 0;
}
std::string cuda_unavailable_reason() {
  return "no GPU support in this build (built without CUDA: GTL_CUDA=OFF or no nvcc)";
}
DeviceProperties device_properties(int index) {
  throw Error("device_properties(" + std::to_string(index) + "): " + cuda_unavailable_reason());
}
std::string cuda_version_string() {
  return "built without CUDA";
}
DeviceGuard::DeviceGuard(Device device) {
  GTL_CHECK(!device.is_cuda(), "DeviceGuard(" << device << "): " << cuda_unavailable_reason());
}
DeviceGuard::~DeviceGuard() = default;

#endif

}  // namespace gtl
