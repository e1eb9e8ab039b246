// Theoretical occupancy: how many blocks of a kernel one SM holds at once, and which of its
// resources stops the next block.
//
//   const Occupancy o = theoretical_occupancy({256, 64, 0}, SmLimits::sm_90());
//   o.blocks_per_sm == 4, o.limited_by == OccupancyLimit::Registers, o.fraction() == 0.5
//
// The rules, limit by limit: occupancy.cpp's opening comment (lab 09's students derive them
// before they read it).
//
// This is the rule of CUDA's occupancy calculator (cuda_occupancy.h) for sm_80 and sm_90 with
// the shared-memory carveout at its largest (cudaFuncAttributePreferredSharedMemoryCarveout 100)
// and the opt-in shared-memory size per block; a GPU test holds it to
// cudaOccupancyMaxActiveBlocksPerMultiprocessor. It is theoretical: achieved occupancy (what a
// profiler measures) is lower when blocks finish unevenly or the grid is small.
#pragma once

#include <cstdint>
#include <string>

namespace gtl {

struct SmLimits {
  std::string arch;                       // "sm_80"
  int max_threads_per_sm = 0;             // 2048: 64 warp slots
  int max_threads_per_block = 0;          // 1024
  int max_blocks_per_sm = 0;              // 32
  int registers_per_sm = 0;               // 65536 32-bit registers
  int max_registers_per_block = 0;        // 65536
  int max_registers_per_thread = 0;       // 255
  int register_unit = 0;                  // a warp's registers come in units of 256
  int sub_partitions = 0;                 // 4 schedulers, each with a quarter of the registers
  int64_t shared_per_sm = 0;              // bytes, at the largest carveout
  int64_t max_shared_per_block = 0;       // bytes a block may ask for (opt-in)
  int64_t reserved_shared_per_block = 0;  // bytes the driver keeps for each block (1 KiB)
  int shared_unit = 0;                    // shared memory comes in units of 128 bytes

  static SmLimits sm_80();  // A100: 164 KiB of shared memory per SM
  static SmLimits sm_90();  // H100, H200: 228 KiB
  // The limits of GPU `index`, from its properties (needs a GPU).
  static SmLimits of_device(int index);
};

struct KernelResources {
  int threads_per_block = 0;
  int registers_per_thread = 0;        // nvcc -Xptxas -v, or cudaFuncGetAttributes' numRegs
  int64_t shared_bytes_per_block = 0;  // static plus dynamic
};

enum class OccupancyLimit { Warps, Blocks, Registers, SharedMemory };
const char* occupancy_limit_name(OccupancyLimit limit);  // "warps", "blocks", ...

struct Occupancy {
  // Each resource's own limit, in blocks per SM.
  int by_warps = 0, by_blocks = 0, by_registers = 0, by_shared_memory = 0;
  int blocks_per_sm = 0;  // the smallest of the four
  int warps_per_sm = 0;   // blocks_per_sm * warps per block
  int max_warps_per_sm = 0;
  // The resource that sets blocks_per_sm (on a tie, the first in the enum's order).
  OccupancyLimit limited_by = OccupancyLimit::Warps;

  double fraction() const {
    return max_warps_per_sm > 0 ? static_cast<double>(warps_per_sm) / max_warps_per_sm : 0.0;
  }
};

// Throws gtl::Error for a block of no threads or a negative resource.
Occupancy theoretical_occupancy(const KernelResources& kernel, const SmLimits& sm);

}  // namespace gtl
