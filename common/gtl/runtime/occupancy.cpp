// The occupancy calculator (occupancy.h).
//
// An SM runs a block only when all of the block's warps, registers and shared memory fit beside
// the blocks already there. Four limits, each a whole number of blocks:
//   warps       max_threads_per_sm / 32 warp slots, ceil(threads / 32) per block;
//   blocks      max_blocks_per_sm, however small the blocks;
//   registers   each warp gets registers_per_thread * 32 rounded up to register_unit (256); the
//               register file is split into sub_partitions (4) and a warp lives in one, so the
//               SM holds sub_partitions * floor(registers_per_sm / sub_partitions / per warp)
//               warps; a block whose warps (rounded up to a multiple of sub_partitions) need
//               more than max_registers_per_block cannot launch at all;
//   shared      each block takes its bytes plus reserved_shared_per_block, rounded up to
//               shared_unit, out of shared_per_sm; above max_shared_per_block it cannot launch.
// The SM holds the smallest of the four (0: the kernel cannot launch with these resources).
// occupancy = resident warps / the SM's warp slots.
#include "gtl/runtime/occupancy.h"

#include <algorithm>
#include <climits>

#include "gtl/runtime/device.h"
#include "gtl/runtime/error.h"

#ifdef GTL_WITH_CUDA
#include "gtl/runtime/cuda_check.h"
#endif

namespace gtl {
namespace {

constexpr int kWarp = 32;

int64_t round_up(int64_t x, int64_t unit) {
  return (x + unit - 1) / unit * unit;
}

SmLimits ampere_or_hopper(std::string arch, int64_t shared_per_sm) {
  SmLimits s;
  s.arch = std::move(arch);
  s.max_threads_per_sm = 2048;
  s.max_threads_per_block = 1024;
  s.max_blocks_per_sm = 32;
  s.registers_per_sm = 65536;
  s.max_registers_per_block = 65536;
  s.max_registers_per_thread = 255;
  s.register_unit = 256;
  s.sub_partitions = 4;
  s.shared_per_sm = shared_per_sm;
  s.reserved_shared_per_block = 1024;
  s.max_shared_per_block = shared_per_sm - s.reserved_shared_per_block;
  s.shared_unit = 128;
  return s;
}

}  // namespace

SmLimits SmLimits::sm_80() {
  return ampere_or_hopper("sm_80", 164 * 1024);
}
SmLimits SmLimits::sm_90() {
  return ampere_or_hopper("sm_90", 228 * 1024);
}

SmLimits SmLimits::of_device(int index) {
#ifdef GTL_WITH_CUDA
  cudaDeviceProp p{};
  GTL_CUDA_CHECK(cudaGetDeviceProperties(&p, index));
  SmLimits s = ampere_or_hopper("sm_" + std::to_string(p.major) + std::to_string(p.minor),
                                static_cast<int64_t>(p.sharedMemPerMultiprocessor));
  s.max_threads_per_sm = p.maxThreadsPerMultiProcessor;
  s.max_threads_per_block = p.maxThreadsPerBlock;
  s.max_blocks_per_sm = p.maxBlocksPerMultiProcessor;
  s.registers_per_sm = p.regsPerMultiprocessor;
  s.max_registers_per_block = p.regsPerBlock;
  s.max_shared_per_block = static_cast<int64_t>(p.sharedMemPerBlockOptin);
  s.reserved_shared_per_block = static_cast<int64_t>(p.reservedSharedMemPerBlock);
  return s;
#else
  throw Error("SmLimits::of_device(" + std::to_string(index) + "): " + cuda_unavailable_reason());
#endif
}

const char* occupancy_limit_name(OccupancyLimit limit) {
  switch (limit) {
    case OccupancyLimit::Warps:
      return "warps";
    case OccupancyLimit::Blocks:
      return "blocks";
    case OccupancyLimit::Registers:
      return "registers";
    case OccupancyLimit::SharedMemory:
      return "shared memory";
  }
  return "?";
}

Occupancy theoretical_occupancy(const KernelResources& k, const SmLimits& sm) {
  GTL_CHECK(k.threads_per_block > 0,
            "theoretical_occupancy: a block of " << k.threads_per_block << " threads (at least 1)");
  GTL_CHECK(k.registers_per_thread >= 0 && k.shared_bytes_per_block >= 0,
            "theoretical_occupancy: negative registers ("
                << k.registers_per_thread << ") or shared bytes (" << k.shared_bytes_per_block
                << ")");
  Occupancy o;
  o.max_warps_per_sm = sm.max_threads_per_sm / kWarp;
  const int warps_per_block = (k.threads_per_block + kWarp - 1) / kWarp;
  const bool launchable = k.threads_per_block <= sm.max_threads_per_block;

  o.by_warps = launchable ? o.max_warps_per_sm / warps_per_block : 0;
  o.by_blocks = sm.max_blocks_per_sm;

  // Registers: per warp in whole units, warps packed into each sub-partition's share.
  const int64_t per_warp = round_up(int64_t{k.registers_per_thread} * kWarp, sm.register_unit);
  const int64_t per_block_assumed =
      per_warp * round_up(warps_per_block, sm.sub_partitions);  // the hardware's check
  if (k.registers_per_thread > sm.max_registers_per_thread ||
      per_block_assumed > sm.max_registers_per_block) {
    o.by_registers = 0;
  } else if (per_warp == 0) {
    o.by_registers = INT_MAX;
  } else {
    const int64_t warps_per_partition = sm.registers_per_sm / sm.sub_partitions / per_warp;
    o.by_registers = static_cast<int>(warps_per_partition * sm.sub_partitions / warps_per_block);
  }

  // Shared memory: the block's bytes and the driver's reserve, in whole units.
  const int64_t shared =
      round_up(k.shared_bytes_per_block + sm.reserved_shared_per_block, sm.shared_unit);
  // A block that takes no shared memory at all (none of its own, no reserve) is not limited by it.
  o.by_shared_memory = k.shared_bytes_per_block > sm.max_shared_per_block ? 0
                       : shared == 0                                      ? INT_MAX
                                     : static_cast<int>(sm.shared_per_sm / shared);

  o.blocks_per_sm = o.by_warps;
  o.limited_by = OccupancyLimit::Warps;
  for (const auto& [limit, blocks] : {std::pair{OccupancyLimit::Blocks, o.by_blocks},
                                      std::pair{OccupancyLimit::Registers, o.by_registers},
                                      std::pair{OccupancyLimit::SharedMemory, o.by_shared_memory}})
    if (blocks < o.blocks_per_sm) {
      o.blocks_per_sm = blocks;
      o.limited_by = limit;
    }
  o.warps_per_sm = o.blocks_per_sm * warps_per_block;
  return o;
}

}  // namespace gtl
