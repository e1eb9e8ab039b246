// The occupancy calculator (gtl/runtime/occupancy.h) against cases worked out by hand from its
// rule (CUDA's cuda_occupancy.h), on the sm_80 and sm_90 presets. Each case names the limit it
// exercises; the arithmetic is in the comment beside it.
#include <gtest/gtest.h>

#include <climits>

#include "gtl/runtime/error.h"
#include "gtl/runtime/occupancy.h"

namespace gtl {
namespace {

struct Case {
  const char* what;
  KernelResources kernel;
  int by_warps, by_registers, by_shared_80, by_shared_90;  // INT_MAX: registers do not limit
  int blocks_80, blocks_90;
  OccupancyLimit limit_80, limit_90;
};

// clang-format off
const Case kCases[] = {
  // 8 warps a block: 64 / 8 = 8. 32 registers: 1024 a warp, 16384 / 1024 = 16 warps in each of
  // 4 sub-partitions = 64 warps = 8 blocks. Shared: the 1 KiB reserve alone, 164 / 228 blocks.
  {"256 threads, 32 registers", {256, 32, 0}, 8, 8, 164, 228, 8, 8,
   OccupancyLimit::Warps, OccupancyLimit::Warps},
  // 64 registers: 2048 a warp, 8 a sub-partition, 32 warps = 4 blocks (half the warp slots).
  {"256 threads, 64 registers", {256, 64, 0}, 8, 4, 164, 228, 4, 4,
   OccupancyLimit::Registers, OccupancyLimit::Registers},
  // 40 registers: 1280 a warp, floor(16384 / 1280) = 12 a sub-partition, 48 warps = 12 blocks of
  // 4 warps. Shared: 48 KiB + 1 KiB = 50176 bytes a block: floor(167936 / 50176) = 3 on sm_80,
  // floor(233472 / 50176) = 4 on sm_90.
  {"128 threads, 40 registers, 48 KiB", {128, 40, 49152}, 16, 12, 3, 4, 3, 4,
   OccupancyLimit::SharedMemory, OccupancyLimit::SharedMemory},
  // 65 registers: 2080 a warp, rounded up to 2304; 32 warps x 2304 = 73728 > 65536 registers a
  // block: the launch fails ("too many resources requested").
  {"1024 threads, 65 registers", {1024, 65, 0}, 2, 0, 164, 228, 0, 0,
   OccupancyLimit::Registers, OccupancyLimit::Registers},
  // One warp a block: 64 warp slots, but at most 32 blocks on an SM: half the slots stay empty.
  {"32 threads, 16 registers", {32, 16, 0}, 64, 128, 164, 228, 32, 32,
   OccupancyLimit::Blocks, OccupancyLimit::Blocks},
  // 104 registers: 3328 a warp. The whole file would hold floor(65536 / 3328) = 19 warps, but a
  // warp lives in one sub-partition: floor(16384 / 3328) = 4 each, 16 warps.
  {"32 threads, 104 registers", {32, 104, 0}, 64, 16, 164, 228, 16, 16,
   OccupancyLimit::Registers, OccupancyLimit::Registers},
  // More threads than a block may have.
  {"2048 threads", {2048, 16, 0}, 0, 2, 164, 228, 0, 0, OccupancyLimit::Warps,
   OccupancyLimit::Warps},
  // No registers: no register limit. 100 KiB + 1 KiB a block: 1 on sm_80, 2 on sm_90.
  {"64 threads, 100 KiB", {64, 0, 102400}, 32, INT_MAX, 1, 2, 1, 2,
   OccupancyLimit::SharedMemory, OccupancyLimit::SharedMemory},
  // Above the largest block (163 KiB on sm_80, 227 KiB on sm_90): it cannot launch.
  {"256 threads, 300 KiB", {256, 0, 307200}, 8, INT_MAX, 0, 0, 0, 0,
   OccupancyLimit::SharedMemory, OccupancyLimit::SharedMemory},
};
// clang-format on

TEST(Occupancy, WorkedCasesOnSm80AndSm90) {
  for (const Case& c : kCases)
    for (const bool hopper : {false, true}) {
      const SmLimits sm = hopper ? SmLimits::sm_90() : SmLimits::sm_80();
      const Occupancy o = theoretical_occupancy(c.kernel, sm);
      const std::string who = std::string(c.what) + " on " + sm.arch;
      EXPECT_EQ(o.by_warps, c.by_warps) << who;
      EXPECT_EQ(o.by_blocks, 32) << who;
      EXPECT_EQ(o.by_registers, c.by_registers) << who;
      EXPECT_EQ(o.by_shared_memory, hopper ? c.by_shared_90 : c.by_shared_80) << who;
      const int blocks = hopper ? c.blocks_90 : c.blocks_80;
      EXPECT_EQ(o.blocks_per_sm, blocks) << who;
      EXPECT_EQ(o.warps_per_sm, blocks * ((c.kernel.threads_per_block + 31) / 32)) << who;
      EXPECT_EQ(o.limited_by, hopper ? c.limit_90 : c.limit_80)
          << who << ": limited by " << occupancy_limit_name(o.limited_by);
      EXPECT_DOUBLE_EQ(o.fraction(), o.warps_per_sm / 64.0) << who;
    }
}

TEST(Occupancy, PresetsAreThePublishedLimits) {
  const SmLimits a = SmLimits::sm_80(), h = SmLimits::sm_90();
  EXPECT_EQ(a.shared_per_sm, 167936);         // 164 KiB
  EXPECT_EQ(a.max_shared_per_block, 166912);  // 163 KiB: the SM's less the 1 KiB reserve
  EXPECT_EQ(h.shared_per_sm, 233472);         // 228 KiB
  EXPECT_EQ(h.max_shared_per_block, 232448);  // 227 KiB
  for (const SmLimits& s : {a, h}) {
    EXPECT_EQ(s.max_threads_per_sm, 2048) << s.arch;
    EXPECT_EQ(s.registers_per_sm, 65536) << s.arch;
    EXPECT_EQ(s.max_blocks_per_sm, 32) << s.arch;
  }
}

// An SM that reserves nothing per block, and a block with no shared memory: shared memory is no
// limit at all (it once divided by zero); the warps bind.
TEST(Occupancy, NoSharedMemoryAtAllIsNoLimit) {
  SmLimits sm = SmLimits::sm_90();
  sm.reserved_shared_per_block = 0;
  const Occupancy o = theoretical_occupancy({256, 32, 0}, sm);
  EXPECT_EQ(o.by_shared_memory, INT_MAX);
  EXPECT_EQ(o.blocks_per_sm, 8);
  EXPECT_EQ(o.limited_by, OccupancyLimit::Warps);
}

TEST(Occupancy, RefusesAnEmptyBlockOrNegativeResources) {
  EXPECT_THROW(theoretical_occupancy({0, 32, 0}, SmLimits::sm_90()), Error);
  EXPECT_THROW(theoretical_occupancy({128, -1, 0}, SmLimits::sm_90()), Error);
  EXPECT_THROW(theoretical_occupancy({128, 32, -4}, SmLimits::sm_90()), Error);
}

}  // namespace
}  // namespace gtl
