// Tests of the CPU emulator for CUDA kernels (common/emulator/cuda_emulator.h) and of the build
// step that turns .cu files into emulated C++ (cmake/GtlEmulator.cmake). Every emulated lab test
// trusts both: that a kernel sees the index variables a GPU gives it, that __syncthreads and warp
// shuffles behave as on a GPU, and that the bugs a GPU punishes (a missing barrier, a barrier or
// shuffle some threads skip, an out-of-bounds access, a launch the GPU rejects) fail here too.
//
// Launches rotate through three thread schedules (forward, reverse, warps running ahead), one per
// launch, so a test that launches a kernel kSchedules times in a row runs it under each.
// GTL_EMULATOR_SCHEDULE=forward|reverse|warps fixes one; every test passes under each setting.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <cstdlib>
#include <limits>
#include <numeric>
#include <string>
#include <vector>

#include "emulator_kernels.h"

namespace {

constexpr int kSchedules = 3;  // consecutive launches that cover every schedule in rotation
constexpr unsigned kUnwritten = 0xdeadbeefu;

// GTL_EMULATOR_SCHEDULE as the emulator reads it: "rotate" unless fixed.
std::string schedule_setting() {
  const char* v = std::getenv("GTL_EMULATOR_SCHEDULE");
  return v ? v : "rotate";
}

// ---- 1. index variables -------------------------------------------------------------------------
// Every kernel computes its element from these; a wrong blockDim or a y/z mix-up on the emulator
// would let a kernel with swapped 2-D indices (a transpose, a GEMM tile) pass here and fail on a
// GPU. Each thread writes all 13 values and every one is checked, for every thread.
void check_indices(dim3 grid, dim3 block) {
  const size_t threads = size_t{block.x} * block.y * block.z;
  const size_t total = threads * grid.x * grid.y * grid.z;
  std::vector<unsigned> out(total * emutest::kIndexFields, kUnwritten);
  emutest::write_indices(grid, block, out.data());
  unsigned id = 0;
  int failures = 0;
  for (unsigned bz = 0; bz < grid.z; ++bz)
    for (unsigned by = 0; by < grid.y; ++by)
      for (unsigned bx = 0; bx < grid.x; ++bx)
        for (unsigned tz = 0; tz < block.z; ++tz)
          for (unsigned ty = 0; ty < block.y; ++ty)
            for (unsigned tx = 0; tx < block.x; ++tx, ++id) {
              const unsigned want[emutest::kIndexFields] = {
                  id, tx, ty, tz, bx, by, bz, block.x, block.y, block.z, grid.x, grid.y, grid.z};
              for (int k = 0; k < emutest::kIndexFields; ++k) {
                const unsigned got = out[size_t{id} * emutest::kIndexFields + k];
                if (got != want[k] && failures++ < 5)
                  ADD_FAILURE() << "grid (" << grid.x << ", " << grid.y << ", " << grid.z
                                << "), block (" << block.x << ", " << block.y << ", " << block.z
                                << "): thread " << id << " field " << k << " is " << got
                                << (got == kUnwritten ? " (never written)" : "") << ", expected "
                                << want[k];
              }
            }
  EXPECT_EQ(failures, 0) << "index mismatches in grid (" << grid.x << ", " << grid.y << ", "
                         << grid.z << "), block (" << block.x << ", " << block.y << ", " << block.z
                         << ")";
  EXPECT_EQ(id, total);
}

TEST(EmulatorIndices, OneDimensional) {
  for (int launch = 0; launch < kSchedules; ++launch) {
    check_indices(dim3(1), dim3(1));
    check_indices(dim3(3), dim3(70));  // a block that is not a whole number of warps
    check_indices(dim3(2), dim3(1024));
  }
}

TEST(EmulatorIndices, TwoDimensional) {
  for (int launch = 0; launch < kSchedules; ++launch) {
    check_indices(dim3(3, 2), dim3(8, 5));
    check_indices(dim3(1, 4), dim3(32, 3));
  }
}

TEST(EmulatorIndices, ThreeDimensional) {
  for (int launch = 0; launch < kSchedules; ++launch) {
    check_indices(dim3(2, 3, 4), dim3(4, 3, 2));
    check_indices(dim3(1, 1, 2), dim3(2, 2, 64));  // blockDim.z at its limit, 64
  }
}

// ---- 2. __syncthreads ---------------------------------------------------------------------------
// Inputs that differ from launch to launch and block to block: shared memory keeps the previous
// block's values (as a GPU's does), so a read before the write shows as a wrong value.
std::vector<float> launch_inputs(int n, int launch) {
  std::vector<float> v(n);
  for (int i = 0; i < n; ++i) v[i] = static_cast<float>(1 + i + 1000 * launch);
  return v;
}

std::vector<float> neighbour_sums(const std::vector<float>& in, int threads) {
  std::vector<float> want(in.size());
  for (size_t i = 0; i < in.size(); ++i) {
    const size_t base = i / threads * threads, t = i % threads;
    want[i] = in[base + (t + threads - 1) % threads] + in[base + (t + 1) % threads];
  }
  return want;
}

// The textbook exchange through shared memory: write, barrier, read a neighbour's slot. With the
// barrier it must be right under every schedule; a false failure here would make students hunt a
// bug they do not have.
TEST(EmulatorSyncthreads, NeighbourExchangeWithBarrierIsRightUnderEverySchedule) {
  constexpr int kBlocks = 3;
  for (int threads : {32, 96, 256})
    for (int launch = 0; launch < kSchedules; ++launch) {
      const std::vector<float> in = launch_inputs(kBlocks * threads, launch);
      std::vector<float> out(in.size(), -1.f);
      emutest::neighbour_sum(in.data(), out.data(), kBlocks, threads, true);
      EXPECT_EQ(out, neighbour_sums(in, threads)) << threads << " threads, launch " << launch;
    }
}

// The same kernel without the barrier. On a GPU this is a race that usually passes a quick test
// and fails later, elsewhere; the emulator must make it fail now. Forward order exposes the read
// of the right neighbour (not yet written), reverse order the left one, so at least one of any
// kSchedules consecutive launches is wrong (in fact every schedule exposes one of the two reads).
TEST(EmulatorSyncthreads, MissingBarrierGivesAWrongResult) {
  constexpr int kBlocks = 3, kThreads = 64;
  int wrong = 0;
  for (int launch = 0; launch < kSchedules; ++launch) {
    const std::vector<float> in = launch_inputs(kBlocks * kThreads, launch + 10);
    std::vector<float> out(in.size(), -1.f);
    emutest::neighbour_sum(in.data(), out.data(), kBlocks, kThreads, false);
    wrong += out != neighbour_sums(in, kThreads);
  }
  EXPECT_GE(wrong, 1) << "a kernel that reads shared memory before a __syncthreads gave the "
                         "right answer under "
                      << kSchedules << " consecutive launches: the emulator hides the race";
}

// Which schedule exposes which missing barrier, launch by launch: a thread that reads its right
// neighbour's slot before the barrier reads a stale value when threads run in increasing order
// (forward, and warps-ahead, which runs each warp's lanes in order), its left neighbour's when they
// run in decreasing order (reverse). Both races are real on a GPU, where warps run in any order;
// each schedule alone would miss one of them, which is why launches rotate through all three.
TEST(EmulatorSyncthreads, EachScheduleExposesADifferentMissingBarrier) {
  constexpr int kBlocks = 3, kThreads = 64;
  const std::string schedule = schedule_setting();
  for (int offset : {-1, 1}) {
    int wrong = 0;
    for (int launch = 0; launch < kSchedules; ++launch) {
      const std::vector<float> in = launch_inputs(kBlocks * kThreads, launch + 20);
      std::vector<float> out(in.size(), -1.f), want(in.size());
      for (int i = 0; i < kBlocks * kThreads; ++i) {
        const int j = i % kThreads + offset;
        want[i] = j >= 0 && j < kThreads ? in[i + offset] : in[i];
      }
      emutest::neighbour_without_barrier(in.data(), out.data(), kBlocks, kThreads, offset);
      wrong += out != want;
    }
    // Right neighbour: wrong under forward and warps; left neighbour: wrong under reverse.
    const int exposing = offset > 0 ? (schedule == "reverse"  ? 0
                                       : schedule == "rotate" ? 2
                                                              : 3)
                                    : (schedule == "reverse"  ? 3
                                       : schedule == "rotate" ? 1
                                                              : 0);
    EXPECT_EQ(wrong, exposing) << "reading the " << (offset > 0 ? "right" : "left")
                               << " neighbour without a barrier, GTL_EMULATOR_SCHEDULE="
                               << schedule;
  }
}

// A barrier inside a loop (a shared-memory tree reduction): every level must see the previous
// level complete. Integers in floats, so the sums are exact.
TEST(EmulatorSyncthreads, TreeReductionWithABarrierPerLevel) {
  constexpr int kBlocks = 5;
  for (int threads : {32, 64, 256})
    for (int launch = 0; launch < kSchedules; ++launch) {
      const std::vector<float> in = launch_inputs(kBlocks * threads, launch);
      std::vector<float> out(kBlocks, -1.f), want(kBlocks, 0.f);
      for (int i = 0; i < kBlocks * threads; ++i) want[i / threads] += in[i];
      emutest::tree_sum(in.data(), out.data(), kBlocks, threads);
      EXPECT_EQ(out, want) << threads << " threads, launch " << launch;
    }
}

// Values in [1, 2) in quarters: a warp's sum (>= 32) is never a block maximum, and sums are exact.
std::vector<float> quarters(int n) {
  std::vector<float> v(n);
  for (int i = 0; i < n; ++i) v[i] = 1.f + static_cast<float>((i * 7) % 4) / 4.f;
  return v;
}

// Counts the launches of max_then_sum (kSchedules in a row) whose results are wrong.
int wrong_max_then_sum_launches(bool with_barrier) {
  constexpr int kBlocks = 3, kThreads = 64;
  const std::vector<float> in = quarters(kBlocks * kThreads);
  std::vector<float> want_max(in.size()), want_sums(kBlocks, 0.f);
  for (int b = 0; b < kBlocks; ++b) {
    const auto first = in.begin() + b * kThreads;
    std::fill_n(want_max.begin() + b * kThreads, kThreads, *std::max_element(first, first + 64));
    want_sums[b] = std::accumulate(first, first + kThreads, 0.f);
  }
  int wrong = 0;
  for (int launch = 0; launch < kSchedules; ++launch) {
    std::vector<float> max_seen(in.size(), -1.f), sums(kBlocks, -1.f);
    emutest::max_then_sum(in.data(), max_seen.data(), sums.data(), kBlocks, with_barrier);
    wrong += max_seen != want_max || sums != want_sums;
  }
  return wrong;
}

// Two block reductions sharing one scratch array (a softmax's max, then its sum). Without a
// barrier between them a warp that runs ahead, as warps do on a GPU, overwrites a partial maximum
// another warp has not read yet. Only the warps-ahead schedule exposes this (forward and reverse
// let every thread read before any writes), which is why the emulator has it: in rotation exactly
// one of kSchedules consecutive launches is wrong.
TEST(EmulatorSyncthreads, BarrierBetweenTwoUsesOfSharedMemory) {
  EXPECT_EQ(wrong_max_then_sum_launches(true), 0);
  const std::string schedule = schedule_setting();
  const int expected_wrong = schedule == "rotate" ? 1 : schedule == "warps" ? kSchedules : 0;
  EXPECT_EQ(wrong_max_then_sum_launches(false), expected_wrong)
      << "GTL_EMULATOR_SCHEDULE=" << schedule;
}

// ---- 3. warp shuffles ---------------------------------------------------------------------------
// The lane a shuffle reads from, as the CUDA programming guide defines it for width w (the warp is
// cut into segments of w lanes): xor and down keep the lane's own value when the source lies past
// its segment's end (for down, past lane 31 when w = 32), up when it lies before its start;
// __shfl_sync reads lane src % w of the segment.
int source_lane(emutest::Shuffle kind, int lane, int arg, int width) {
  const int first = lane / width * width, last = first + width - 1;
  switch (kind) {
    case emutest::Shuffle::kXor:
      return (lane ^ arg) <= last ? lane ^ arg : lane;
    case emutest::Shuffle::kDown:
      return lane + arg <= last ? lane + arg : lane;
    case emutest::Shuffle::kUp:
      return lane - arg >= first ? lane - arg : lane;
    case emutest::Shuffle::kIndex:
      return first + arg % width;
  }
  return -1;
}

const char* name(emutest::Shuffle kind) {
  switch (kind) {
    case emutest::Shuffle::kXor:
      return "__shfl_xor_sync";
    case emutest::Shuffle::kDown:
      return "__shfl_down_sync";
    case emutest::Shuffle::kUp:
      return "__shfl_up_sync";
    case emutest::Shuffle::kIndex:
      return "__shfl_sync";
  }
  return "?";
}

struct ShuffleCase {
  emutest::Shuffle kind;
  int arg, width;
};

// Every lane's result against source_lane, for full blocks (64) and a partial last warp (48: the
// second warp has 16 lanes). A lane whose source would be a lane the block does not have is not
// checked: its value is undefined on a GPU.
template <typename T>
void check_shuffles(const std::vector<ShuffleCase>& cases, T base, T step) {
  constexpr int kBlocks = 2;
  for (int threads : {64, 48})
    for (const ShuffleCase& c : cases)
      for (int launch = 0; launch < kSchedules; ++launch) {
        std::vector<T> in(kBlocks * threads), out(in.size(), T(-1));
        for (size_t i = 0; i < in.size(); ++i) in[i] = base + step * static_cast<T>(i + launch);
        emutest::shuffle(c.kind, in.data(), out.data(), c.arg, c.width, kBlocks, threads);
        int checked = 0, failures = 0;
        for (int i = 0; i < kBlocks * threads; ++i) {
          const int t = i % threads, lane = t % 32, warp_start = i - lane;
          const int src = source_lane(c.kind, lane, c.arg, c.width);
          if (t - lane + src >= threads) continue;  // no such lane in a partial warp
          ++checked;
          if (out[i] != in[warp_start + src] && failures++ < 3)
            ADD_FAILURE() << name(c.kind) << "(arg " << c.arg << ", width " << c.width << "), "
                          << threads << " threads: thread " << i << " got " << out[i]
                          << ", expected lane " << src << "'s " << in[warp_start + src];
        }
        EXPECT_EQ(failures, 0);
        EXPECT_GE(checked, kBlocks * threads / 2);  // most lanes have their source
      }
}

// Warp reductions and broadcasts are built from these four; each is checked at offsets inside
// the warp, at the edges (lanes past 31 keep their own value for down, before 0 for up), with
// sub-warp widths (segmented reductions over 16 or 8 lanes), and over a partial last warp.
TEST(EmulatorShuffle, EveryKindMovesTheRightLanesValue) {
  using emutest::Shuffle;
  const std::vector<ShuffleCase> cases = {
      {Shuffle::kXor, 1, 32},   {Shuffle::kXor, 2, 32},    {Shuffle::kXor, 16, 32},
      {Shuffle::kXor, 31, 32},  {Shuffle::kXor, 4, 8},     {Shuffle::kXor, 8, 16},
      {Shuffle::kXor, 16, 8},  // a later segment: its own value; an earlier one: that lane's
      {Shuffle::kDown, 1, 32},  {Shuffle::kDown, 5, 32},   {Shuffle::kDown, 16, 32},
      {Shuffle::kDown, 31, 32}, {Shuffle::kDown, 4, 16},   {Shuffle::kDown, 3, 8},
      {Shuffle::kUp, 1, 32},    {Shuffle::kUp, 3, 32},     {Shuffle::kUp, 16, 32},
      {Shuffle::kUp, 2, 16},    {Shuffle::kUp, 1, 8},      {Shuffle::kIndex, 0, 32},
      {Shuffle::kIndex, 7, 32}, {Shuffle::kIndex, 31, 32}, {Shuffle::kIndex, 37, 32},
      {Shuffle::kIndex, 0, 16}, {Shuffle::kIndex, 5, 8},   {Shuffle::kIndex, 13, 8}};
  check_shuffles<float>(cases, 0.5f, 1.f);
}

// 8-byte values move whole: every double here needs all 64 bits to compare equal.
TEST(EmulatorShuffle, EightByteValues) {
  using emutest::Shuffle;
  check_shuffles<double>({{Shuffle::kXor, 1, 32},
                          {Shuffle::kDown, 8, 32},
                          {Shuffle::kUp, 8, 32},
                          {Shuffle::kIndex, 3, 32}},
                         1.0, 1e-12);
}

// The butterfly reduction (every lane ends with its group's total) over whole warps, and over
// 16-lane groups in a block of 48, whose second warp is partial.
TEST(EmulatorShuffle, XorButterflyReduction) {
  constexpr int kBlocks = 3;
  for (auto [threads, first_mask] : {std::pair{64, 16}, std::pair{48, 8}, std::pair{96, 2}}) {
    const int group = 2 * first_mask;
    for (int launch = 0; launch < kSchedules; ++launch) {
      std::vector<int> in(kBlocks * threads), out(in.size(), -1), want(in.size(), 0);
      for (size_t i = 0; i < in.size(); ++i) in[i] = static_cast<int>(i * 3 + launch);
      for (size_t i = 0; i < in.size(); ++i) want[i / group * group] += in[i];
      for (size_t i = 0; i < in.size(); ++i) want[i] = want[i / group * group];
      emutest::xor_reduce(in.data(), out.data(), first_mask, kBlocks, threads);
      EXPECT_EQ(out, want) << threads << " threads, first mask " << first_mask;
    }
  }
}

// The shfl_down tree a block reduction uses: lane 0 ends with the warp's total, and every other
// lane with exactly what a GPU leaves there (a lane whose source is past lane 31 adds itself).
TEST(EmulatorShuffle, DownTreeReduction) {
  constexpr int kBlocks = 2, kThreads = 64;
  for (int launch = 0; launch < kSchedules; ++launch) {
    std::vector<int> in(kBlocks * kThreads), out(in.size(), -1);
    for (size_t i = 0; i < in.size(); ++i) in[i] = static_cast<int>(i * i % 101 + launch);
    std::vector<int> want = in;
    for (size_t w = 0; w < want.size(); w += 32)
      for (int d = 16; d > 0; d /= 2) {
        std::vector<int> before(want.begin() + w, want.begin() + w + 32);
        for (int lane = 0; lane < 32; ++lane)
          want[w + lane] += before[lane + d < 32 ? lane + d : lane];
      }
    emutest::down_reduce(in.data(), out.data(), kBlocks, kThreads);
    EXPECT_EQ(out, want);
    for (size_t w = 0; w < in.size(); w += 32)
      EXPECT_EQ(out[w], std::accumulate(in.begin() + w, in.begin() + w + 32, 0));
  }
}

// ---- 4. dynamic shared memory -------------------------------------------------------------------
// `extern __shared__ float smem[]` sized by the launch's third parameter: the rewrite must turn
// the declaration into a pointer to that many bytes, and a kernel must see the whole of it.
TEST(EmulatorDynamicShared, SizedByTheThirdLaunchParameter) {
  constexpr int kBlocks = 3;
  for (int threads : {32, 100, 256})
    for (int launch = 0; launch < kSchedules; ++launch) {
      const std::vector<float> in = launch_inputs(kBlocks * threads, launch);
      std::vector<float> out(in.size(), -1.f), want(in.size());
      for (int i = 0; i < kBlocks * threads; ++i) {
        const int base = i / threads * threads, t = i % threads;
        want[i] = in[base + threads - 1 - t] + 2 * in[base + (t + 1) % threads];
      }
      emutest::mirror_plus_neighbour(in.data(), out.data(), kBlocks, threads);
      EXPECT_EQ(out, want) << threads << " threads";
    }
}

// float4 through dynamic shared memory: on a GPU it is 16-byte aligned, and a float4 access to a
// misaligned address faults; the emulated build stops on one (-fsanitize=alignment), so this also
// checks that the emulator's buffer is aligned.
TEST(EmulatorDynamicShared, Float4IsAligned) {
  constexpr int kBlocks = 2, kThreads = 64;
  std::vector<float4> in(kBlocks * kThreads), out(in.size());
  for (size_t i = 0; i < in.size(); ++i) {
    const float f = static_cast<float>(i);
    in[i] = make_float4(f, f + 0.25f, f + 0.5f, -f);
  }
  for (int launch = 0; launch < kSchedules; ++launch) {
    std::fill(out.begin(), out.end(), make_float4(-1, -1, -1, -1));
    emutest::triple_float4(in.data(), out.data(), kBlocks, kThreads);
    int failures = 0;
    for (size_t i = 0; i < in.size(); ++i)
      failures += !(out[i].x == 3 * in[i].x && out[i].y == 3 * in[i].y && out[i].z == 3 * in[i].z &&
                    out[i].w == 3 * in[i].w);
    EXPECT_EQ(failures, 0);
  }
}

// ---- 5. launch validation -----------------------------------------------------------------------
struct BadLaunch {
  dim3 grid, block;
  const char* why;  // in the emulator's stderr message
};

// A GPU refuses these launches: nothing runs, and only cudaGetLastError says so. A kernel that is
// never launched leaves its output unwritten, which a test without the error check reads as a
// wrong answer far from the cause; the emulator must refuse them the same way, not run them.
TEST(EmulatorLaunch, RejectsTheConfigurationsAGpuRejects) {
  const std::vector<BadLaunch> bad = {
      {dim3(0), dim3(32), "an empty grid or block"},
      {dim3(4), dim3(0), "an empty grid or block"},
      {dim3(2, 0, 1), dim3(32), "an empty grid or block"},
      {dim3(2), dim3(32, 1, 0), "an empty grid or block"},
      {dim3(1), dim3(1025), "more than 1024 threads per block"},
      {dim3(1), dim3(32, 32, 2), "more than 1024 threads per block"},
      {dim3(1, 65536), dim3(1), "gridDim.y or gridDim.z above 65535"},
      {dim3(1, 1, 65536), dim3(1), "gridDim.y or gridDim.z above 65535"},
      {dim3(1), dim3(2, 4, 65), "blockDim.z above 64"},  // 520 threads, but z is at most 64
      // A negative block count converted to unsigned: the emulator must not run 2^31 blocks.
      {dim3(0x80000000u), dim3(32), "gridDim.x above 2^31 - 1"},
      // 2^32 threads: a product in 32 bits would wrap to 0 and pass a `> 1024` check.
      {dim3(1), dim3(65536, 65536, 1), "more than 1024 threads per block"},
  };
  ASSERT_EQ(cudaGetLastError(), cudaSuccess);
  for (const BadLaunch& b : bad) {
    int count = 0;
    ::testing::internal::CaptureStderr();
    emutest::count_threads(b.grid, b.block, &count);
    const std::string err = ::testing::internal::GetCapturedStderr();
    const std::string what = "grid (" + std::to_string(b.grid.x) + ", " + std::to_string(b.grid.y) +
                             ", " + std::to_string(b.grid.z) + "), block (" +
                             std::to_string(b.block.x) + ", " + std::to_string(b.block.y) + ", " +
                             std::to_string(b.block.z) + ")";
    EXPECT_EQ(count, 0) << what << ": the kernel ran";
    EXPECT_EQ(cudaPeekAtLastError(), cudaErrorInvalidConfiguration) << what;  // does not clear
    EXPECT_EQ(cudaGetLastError(), cudaErrorInvalidConfiguration) << what;
    EXPECT_EQ(cudaGetLastError(), cudaSuccess) << what << ": cudaGetLastError must clear";
    EXPECT_NE(err.find(b.why), std::string::npos) << what << ": stderr was: " << err;
    EXPECT_NE(err.find("cudaErrorInvalidConfiguration"), std::string::npos) << err;
  }
}

// The error stays until read: a later launch that succeeds does not clear it, as on a GPU, where
// checking only after the last launch still reports an earlier failed one.
TEST(EmulatorLaunch, ErrorPersistsUntilRead) {
  ASSERT_EQ(cudaGetLastError(), cudaSuccess);
  int count = 0;
  ::testing::internal::CaptureStderr();
  emutest::count_threads(dim3(1), dim3(2048), &count);
  ::testing::internal::GetCapturedStderr();
  emutest::count_threads(dim3(2), dim3(8), &count);
  EXPECT_EQ(count, 16);
  EXPECT_EQ(cudaGetLastError(), cudaErrorInvalidConfiguration);
  EXPECT_EQ(cudaGetLastError(), cudaSuccess);
}

// The largest configurations a GPU accepts run in full, with no error.
TEST(EmulatorLaunch, AcceptsTheLimits) {
  ASSERT_EQ(cudaGetLastError(), cudaSuccess);
  const std::vector<std::pair<dim3, dim3>> good = {{dim3(1), dim3(1024)},
                                                   {dim3(2), dim3(32, 32)},
                                                   {dim3(1), dim3(4, 4, 64)},
                                                   {dim3(1, 65535), dim3(1)},
                                                   {dim3(1, 1, 65535), dim3(1)}};
  for (const auto& [grid, block] : good) {
    int count = 0;
    emutest::count_threads(grid, block, &count);
    EXPECT_EQ(count, static_cast<int>(grid.x * grid.y * grid.z * block.x * block.y * block.z));
    EXPECT_EQ(cudaGetLastError(), cudaSuccess);
  }
}

// ---- 6. template kernels and kernels in namespaces ----------------------------------------------
// The labs launch kernels that are templates (ns::kernel<float, 3><<<g, b, 0, s>>>) with
// configurations holding '<' and '>' (static_cast<int>(n)), over several lines. The launch
// rewrite must take the whole kernel name and the whole configuration, or the copy does not
// compile (caught at build time) or launches the wrong configuration (caught here).
TEST(EmulatorTemplates, QualifiedTemplateKernelWithCastInConfiguration) {
  for (int n : {1, 127, 128, 1000}) {
    std::vector<float> x(n), y(n, -1.f), want(n);
    for (int i = 0; i < n; ++i) x[i] = 0.5f * static_cast<float>(i) - 7.f, want[i] = 3 * x[i];
    emutest::scale_by_3(x.data(), y.data(), n, nullptr);
    EXPECT_EQ(y, want) << "n = " << n;
  }
}

TEST(EmulatorTemplates, GridStrideTemplateKernelLaunchedOverSeveralLines) {
  cudaStream_t stream = nullptr;
  ASSERT_EQ(cudaStreamCreate(&stream), cudaSuccess);
  for (int64_t n : {int64_t{0}, int64_t{1}, int64_t{63}, int64_t{64}, int64_t{1000}}) {
    std::vector<double> x(n), y(n), want(n);
    for (int64_t i = 0; i < n; ++i) {
      x[i] = 0.25 * static_cast<double>(i);
      y[i] = 1.0 + static_cast<double>(i);
      want[i] = y[i] + 2.5 * x[i];
    }
    emutest::axpy(2.5, x.data(), y.data(), n, stream);  // 3 blocks of 64 at most: a stride loop
    EXPECT_EQ(y, want) << "n = " << n;
  }
  EXPECT_EQ(cudaStreamDestroy(stream), cudaSuccess);
  EXPECT_EQ(cudaGetLastError(), cudaSuccess);
}

// `extern __shared__ T buf[]` inside a template kernel: one dynamic buffer, typed per instance.
TEST(EmulatorTemplates, DynamicSharedOfATemplateType) {
  constexpr int kBlocks = 2, kThreads = 40;
  std::vector<double> din(kBlocks * kThreads), dout(din.size(), -1), dwant(din.size());
  std::vector<int> iin(din.size()), iout(din.size(), -1), iwant(din.size());
  for (int i = 0; i < kBlocks * kThreads; ++i) {
    din[i] = 1.0 + 1e-12 * i;
    iin[i] = 1000 + i;
  }
  for (int i = 0; i < kBlocks * kThreads; ++i) {
    const int src = i / kThreads * kThreads + (i % kThreads + 1) % kThreads;
    dwant[i] = din[src];
    iwant[i] = iin[src];
  }
  for (int launch = 0; launch < kSchedules; ++launch) {
    emutest::rotate_left(din.data(), dout.data(), kBlocks, kThreads);
    emutest::rotate_left(iin.data(), iout.data(), kBlocks, kThreads);
    EXPECT_EQ(dout, dwant);
    EXPECT_EQ(iout, iwant);
  }
}

// ---- 7. atomics ---------------------------------------------------------------------------------
// Many threads of many blocks adding into one address: on a GPU a plain += loses updates, an
// atomic does not. The totals are exact (integers, and halves well below 2^24), each thread's
// ticket (the value atomicAdd returns) is unique, and max, min and a compare-and-swap loop agree.
TEST(EmulatorAtomics, ExactTotalsFromManyThreadsAndBlocks) {
  constexpr int kBlocks = 37, kThreads = 200, kBins = 7, kN = kBlocks * kThreads;
  for (int launch = 0; launch < kSchedules; ++launch) {
    emutest::AtomicCounters c;
    std::vector<int> tickets(kN, -1), histogram(kBins, 0), want_histogram(kBins, 0);
    for (int i = 0; i < kN; ++i) ++want_histogram[i % kBins];
    emutest::atomics(&c, tickets.data(), histogram.data(), kBins, kBlocks, kThreads);
    EXPECT_EQ(c.float_sum, 0.5f * kN);
    EXPECT_EQ(c.unsigned_count, static_cast<unsigned>(kN));
    EXPECT_EQ(c.int_count, kN);
    EXPECT_EQ(c.max_id, kN - 1);
    EXPECT_EQ(c.min_id, 0);
    EXPECT_EQ(c.cas_sum, 2 * kN);
    EXPECT_EQ(c.cas_unchanged, 7) << "atomicCAS swapped although the compare failed";
    EXPECT_EQ(c.cas_seen_sum, 7 * kN) << "atomicCAS must return the old value";
    EXPECT_EQ(histogram, want_histogram);
    std::sort(tickets.begin(), tickets.end());
    std::vector<int> every_id(kN);
    std::iota(every_id.begin(), every_id.end(), 0);
    EXPECT_EQ(tickets, every_id) << "each thread's atomicAdd must return a distinct old value";
  }
}

// ---- 8. stream capture -------------------------------------------------------------------------
// A capture in global mode refuses cudaMalloc as "potentially unsafe" (it may wait for the device)
// and is invalidated by it, as a GPU does: an allocator whose pool grows during a capture must
// relax its thread's capture mode for the call. The mode is the thread's own, and an exchange hands
// back the one it replaces.
TEST(EmulatorCapture, GlobalModeRefusesCudaMallocUnlessTheThreadRelaxed) {
  cudaStream_t s = nullptr;
  ASSERT_EQ(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking), cudaSuccess);
  ASSERT_EQ(cudaStreamBeginCapture(s, cudaStreamCaptureModeGlobal), cudaSuccess);
  cudaStreamCaptureStatus status = cudaStreamCaptureStatusNone;

  void* relaxed = nullptr;
  cudaStreamCaptureMode mode = cudaStreamCaptureModeRelaxed;
  ASSERT_EQ(cudaThreadExchangeStreamCaptureMode(&mode), cudaSuccess);
  EXPECT_EQ(mode, cudaStreamCaptureModeGlobal) << "a thread starts in global mode";
  EXPECT_EQ(cudaMalloc(&relaxed, 64), cudaSuccess) << "a relaxed thread may allocate";
  ASSERT_EQ(cudaThreadExchangeStreamCaptureMode(&mode), cudaSuccess);
  EXPECT_EQ(mode, cudaStreamCaptureModeRelaxed);
  ASSERT_EQ(cudaStreamIsCapturing(s, &status), cudaSuccess);
  EXPECT_EQ(status, cudaStreamCaptureStatusActive) << "a relaxed allocation leaves the capture on";

  void* global = &status;
  EXPECT_EQ(cudaMalloc(&global, 64), cudaErrorStreamCaptureUnsupported);
  EXPECT_EQ(global, nullptr);
  (void)cudaGetLastError();
  ASSERT_EQ(cudaStreamIsCapturing(s, &status), cudaSuccess);
  EXPECT_EQ(status, cudaStreamCaptureStatusInvalidated);
  cudaGraph_t graph = nullptr;
  EXPECT_EQ(cudaStreamEndCapture(s, &graph), cudaErrorStreamCaptureInvalidated);
  EXPECT_EQ(graph, nullptr);
  (void)cudaGetLastError();

  EXPECT_EQ(cudaMalloc(&global, 64), cudaSuccess) << "no capture on: cudaMalloc is allowed again";
  EXPECT_EQ(cudaFree(global), cudaSuccess);
  EXPECT_EQ(cudaFree(relaxed), cudaSuccess);
  EXPECT_EQ(cudaStreamDestroy(s), cudaSuccess);
}

// An event that was never recorded has no time: cudaEventElapsedTime fails with
// cudaErrorInvalidResourceHandle, as on a GPU, instead of measuring from some default.
// Every cudaMalloc is counted, failed ones included: a test can check that a function allocates no
// device memory of its own.
TEST(EmulatorMemory, CountsEveryDeviceAllocation) {
  const uint64_t before = emu::device_allocations();
  void* p = nullptr;
  ASSERT_EQ(cudaMalloc(&p, 256), cudaSuccess);
  EXPECT_EQ(cudaMalloc(&p, size_t{1} << 50), cudaErrorMemoryAllocation);
  (void)cudaGetLastError();
  EXPECT_EQ(emu::device_allocations(), before + 2);
  ASSERT_EQ(cudaMalloc(&p, 64), cudaSuccess);
  cudaFree(p);
  EXPECT_EQ(emu::device_allocations(), before + 3);
}

TEST(EmulatorEvents, ElapsedTimeNeedsBothEventsRecorded) {
  cudaEvent_t a = nullptr, b = nullptr;
  ASSERT_EQ(cudaEventCreate(&a), cudaSuccess);
  ASSERT_EQ(cudaEventCreate(&b), cudaSuccess);
  float ms = -1;
  ASSERT_EQ(cudaEventRecord(a), cudaSuccess);
  EXPECT_EQ(cudaEventElapsedTime(&ms, a, b), cudaErrorInvalidResourceHandle);
  EXPECT_EQ(cudaGetLastError(), cudaErrorInvalidResourceHandle);
  EXPECT_EQ(ms, -1) << "no time is written";
  ASSERT_EQ(cudaEventRecord(b), cudaSuccess);
  EXPECT_EQ(cudaEventElapsedTime(&ms, a, b), cudaSuccess);
  EXPECT_GE(ms, 0);
  EXPECT_EQ(cudaEventDestroy(a), cudaSuccess);
  EXPECT_EQ(cudaEventDestroy(b), cudaSuccess);
}

// ---- 9. bugs the emulator must stop -------------------------------------------------------------
// On a GPU these hang, give undefined results or are reported by compute-sanitizer; a test that
// merely passes would teach the bug. The emulator (or the sanitizers it is built with) must stop
// the program with a message naming the problem. Death tests run in a fresh process
// ("threadsafe"), so the emulator's state from earlier tests plays no part.
class EmulatorDeathTest : public ::testing::Test {
 protected:
  void SetUp() override { GTEST_FLAG_SET(death_test_style, "threadsafe"); }
};

// `if (tid >= n) return;` before a __syncthreads: the threads that stay wait for ones that left.
// On a GPU that hangs or corrupts; the emulator names the barrier and the block.
TEST_F(EmulatorDeathTest, BarrierAfterSomeThreadsExited) {
  EXPECT_DEATH(emutest::barrier_after_early_exit(3, 64),
               "CUDA emulator: __syncthreads\\(\\) reached by some threads of the block after "
               "others exited.*at block \\(1, 0, 0\\)");
}

// Half a warp at __syncthreads and the other half at a full-mask shuffle: each waits for the
// other, a hang on a GPU.
TEST_F(EmulatorDeathTest, BarrierAndShuffleInDivergentCode) {
  EXPECT_DEATH(emutest::barrier_and_shuffle_diverge(),
               "CUDA emulator: deadlock: threads wait at different barriers");
}

// A full-mask warp reduction after `if (i >= n) return;` with n = 40: lanes 8-31 of the second
// warp are gone, and a GPU gives undefined values (or hangs) for the lanes that stayed.
TEST_F(EmulatorDeathTest, FullMaskShuffleAfterLanesExited) {
  std::vector<float> in(40, 1.f), out(2, 0.f);
  EXPECT_DEATH(emutest::shuffle_after_lanes_exit(in.data(), out.data(), 40),
               "CUDA emulator: a warp shuffle with a full mask while some lanes of the warp "
               "have exited.*at block \\(0, 0, 0\\)");
}

// Partial masks are not emulated: the emulator must say so rather than guess.
TEST_F(EmulatorDeathTest, PartialShuffleMaskIsRefused) {
  std::vector<float> out(32);
  EXPECT_DEATH(emutest::shuffle_with_partial_mask(out.data()),
               "CUDA emulator: shuffle masks other than 0xffffffff are not emulated");
}

// A shuffle width must be a power of two up to 32: CUDA leaves any other width undefined.
TEST_F(EmulatorDeathTest, ShuffleWidthNotAPowerOfTwo) {
  std::vector<float> in(32, 1.f), out(32, 0.f);
  EXPECT_DEATH(emutest::shuffle(emutest::Shuffle::kDown, in.data(), out.data(), 1, 12, 1, 32),
               "CUDA emulator: a shuffle width that is not a power of 2 from 1 to 32");
}

// An off-by-one read (in[i + 1] for the last i): on a GPU it reads a neighbour's memory silently
// or faults; compute-sanitizer reports it. Here AddressSanitizer stops the test.
TEST_F(EmulatorDeathTest, ReadOnePastTheEndOfAVector) {
  constexpr int kN = 100;
  std::vector<float> in(kN, 1.f), out(kN, 0.f);
  EXPECT_DEATH(emutest::read_one_past_end(in.data(), out.data(), kN),
               "AddressSanitizer: heap-buffer-overflow.*READ of size "
               "4.*read_one_past_end_kernel.*emulator_kernels\\.cu:[0-9]+");
}

// A kernel without `if (i < n)`: the last block's spare threads write past the end of out.
TEST_F(EmulatorDeathTest, WriteWithoutABoundsCheck) {
  constexpr int kN = 100;  // two blocks of 64: threads 100-127 have no element
  std::vector<float> in(128, 1.f), out(kN, 0.f);
  EXPECT_DEATH(emutest::write_without_bounds_check(in.data(), out.data(), kN),
               "AddressSanitizer: heap-buffer-overflow.*WRITE of size 4");
}

// A static __shared__ array smaller than the block: compute-sanitizer's shared-memory report.
TEST_F(EmulatorDeathTest, StaticSharedArrayOverflow) {
  std::vector<float> in(65, 1.f), out(65, 0.f);
  EXPECT_DEATH(emutest::static_shared_overflow(in.data(), out.data(), 65),
               "AddressSanitizer: global-buffer-overflow.*WRITE of size 4");
}

// Dynamic shared memory smaller than the kernel uses (the third launch parameter counts floats
// where it should count bytes, or half the buffer is forgotten). The larger launch first: the
// emulator must not let an earlier launch's bigger buffer hide the overflow.
TEST_F(EmulatorDeathTest, DynamicSharedMemoryTooSmall) {
  constexpr int kThreads = 64;
  std::vector<float> in(kThreads, 1.f), out(kThreads, 0.f);
  EXPECT_DEATH(
      {
        emutest::mirror_plus_neighbour(in.data(), out.data(), 1, kThreads);  // 2 * 64 floats
        emutest::mirror_plus_neighbour_smem(in.data(), out.data(), 1, kThreads, kThreads);
      },
      "AddressSanitizer: heap-buffer-overflow");
}

// A float4 load from an address that is not 16-byte aligned: "misaligned address" on a GPU.
TEST_F(EmulatorDeathTest, MisalignedFloat4Load) {
  alignas(16) float in[8] = {1, 2, 3, 4, 5, 6, 7, 8};
  float out = 0;
  emutest::load_float4(in, &out, 4);  // aligned: fine
  EXPECT_EQ(out, 5.f + 6.f + 7.f + 8.f);
  EXPECT_DEATH(emutest::load_float4(in, &out, 1),
               "emulator_kernels\\.cu:[0-9]+:[0-9]+: runtime error: .*misaligned address.*requires "
               "16 byte alignment");
}

// A misspelt GTL_EMULATOR_SCHEDULE must not silently fall back to one schedule.
TEST_F(EmulatorDeathTest, UnknownScheduleName) {
  int count = 0;
  EXPECT_DEATH(
      {
        setenv("GTL_EMULATOR_SCHEDULE", "backwards", 1);
        emutest::count_threads(dim3(1), dim3(1), &count);
      },
      "GTL_EMULATOR_SCHEDULE must be forward, reverse, warps or rotate");
}

}  // namespace
