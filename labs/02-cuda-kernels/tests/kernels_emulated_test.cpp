// Lab 02 correctness on the CPU emulator (common/emulator): your kernels, compiled as C++, run with
// one fiber per CUDA thread, so they are checked on any machine, GPU or not. The emulator runs
// every thread of a block up to each __syncthreads before any goes past it, stops at a barrier
// some threads never reach or a shuffle over exited lanes, and rejects the launches a GPU rejects
// (cudaGetLastError returns cudaErrorInvalidConfiguration). It says
// nothing about speed: that is measured on a GPU by lab02_bench.
//
// References are computed in double precision (tests/kernel_cases.h, which the lab's judge shares).
// Outputs start as NaN, so an element a kernel never writes fails, and every comparison fails on
// NaN. Launches take three thread orders in turn (cuda_emulator.h, Schedule);
// GTL_EMULATOR_SCHEDULE=forward|reverse|warps fixes one. Each test records what your kernels
// computed for the judge (gtl_judge_output.h).
//
// TODO 1c's kernel is tested in reduce_final_emulated_test.cpp, and those of TODOs 4, 5 and 5b in
// softmax_layernorm_emulated_test.cpp, built with the reference block reduction, so that they
// pass as soon as their TODO is right, whatever the state of 1b.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

#include "cuda_runtime.h"  // the emulator's: emu::KernelOutput
#include "emulated_mismatch.h"
#include "gtl_judge_output.h"
#include "gtl_test_seed.h"
#include "kernel_cases.h"
#include "kernels.h"
#include "reduce_check.h"

namespace lab02_tests {
void block_max_then_sum(const float* x, float* out, int n, int threads);  // block_reduce_twice.cu
}

namespace {

using namespace lab02_cases;

constexpr float kNaN = std::numeric_limits<float>::quiet_NaN();

TEST(EmulatedReduce, SharedMemoryTree) {
  expect_reduces_every_case("EmulatedReduce.SharedMemoryTree", "TODO 1a shared-memory tree",
                            lab02::reduce_sum_shared,
                            "a level that read a partial sum before its writer had stored it: "
                            "revisit what orders one thread's shared-memory write before "
                            "another's read");
}

TEST(EmulatedReduce, WarpShuffles) {
  expect_reduces_every_case("EmulatedReduce.WarpShuffles", "TODO 1b warp shuffles",
                            lab02::reduce_sum_warp,
                            "a shuffle offset or lane missing in warp_reduce_sum, or the per-warp "
                            "totals not combined in block_reduce");
}

// TODO 1b's block_reduce twice in a row (a max, then a sum, through the same scratch), as the
// softmax and layernorm kernels call it: every thread must get both results. Their own checks use
// a reference block reduction, so this is where a barrier missing in yours shows.
TEST(EmulatedReduce, BlockReduceTwiceInARow) {
  gtl::judge::Outputs recorded("EmulatedReduce.BlockReduceTwiceInARow");
  for (auto [threads, n] : block_twice_cases()) {
    const std::vector<float> x = block_twice_input(n);
    const double want_max = *std::max_element(x.begin(), x.end());
    const auto [want_sum, magnitude] = reduce_reference(x.data(), n);
    emu::KernelOutput<float> out(2 * size_t(threads), kNaN, "out");
    lab02_tests::block_max_then_sum(x.data(), out.data(), n, threads);
    recorded.record_all(out.data(), 2 * size_t(threads));
    for (int t = 0; t < threads; ++t) {
      const float got_max = out[2 * t], got_sum = out[2 * t + 1];
      if (got_max != want_max || !reduce_close(got_sum, want_sum, magnitude)) {
        ADD_FAILURE()
            << "TODO 1b block_reduce called twice in a row (a max, then a sum), " << threads
            << " threads, " << n << " values: thread " << t << " got max " << got_max << " and sum "
            << got_sum << ", expected " << want_max << " and " << want_sum
            << " (a warp that ran ahead into the second call overwrote scratch before the "
               "others had read it in the first: revisit what orders one call's reads of "
               "scratch before the next call's writes; or not every thread gets the result)";
        break;
      }
    }
  }
}

TEST(EmulatedReduce, NaiveBaseline) {
  expect_reduces_every_case("EmulatedReduce.NaiveBaseline", "naive (provided)",
                            lab02::reduce_sum_naive, "the provided kernel was changed");
}

TEST(EmulatedTranspose, BothVersionsOnOddShapes) {
  gtl::judge::Outputs recorded("EmulatedTranspose.BothVersionsOnOddShapes");
  for (auto [rows, cols] : transpose_shapes()) {  // the last one drawn from the seed
    const std::vector<float> in = transpose_input(rows, cols);
    const std::vector<double> expected = transpose_reference(in, rows, cols);
    for (bool tiled : {false, true}) {
      emu::KernelOutput<float> out(in.size(), kNaN, "out");  // kernel threads must write it
      (tiled ? lab02::transpose : lab02::transpose_naive)(in.data(), out.data(), rows, cols,
                                                          nullptr);
      if (tiled) recorded.record_digest(out.data(), in.size());
      const std::string bad = first_mismatch(expected, out.data(), 0, 0);
      expect_no_mismatch(bad, ::testing::Message()
                                  << (tiled ? "TODO 2 tiled" : "naive") << " transpose of " << rows
                                  << "x" << cols << " (" << gtl::test_seed::describe() << ")"
                                  << ": a transpose moves values exactly (check the edge tiles and "
                                  << "the __syncthreads between loading and storing the tile)");
    }
  }
}

using SgemmFn = void (*)(const float*, const float*, float*, int, int, int, cudaStream_t);

TEST(EmulatedSgemm, EveryVersionOnEdgeShapes) {
  const std::vector<std::pair<const char*, SgemmFn>> versions = {
      {"naive (provided)", lab02::sgemm_naive},
      {"TODO 3a shared-memory tiles", lab02::sgemm_tiled},
      {"TODO 3b register tiles", lab02::sgemm_register_tiled}};
  gtl::judge::Outputs recorded("EmulatedSgemm.EveryVersionOnEdgeShapes");
  for (auto [m, n, k] : sgemm_shapes()) {  // the last one drawn from the seed
    const std::vector<float> a = sgemm_a(m, k), b = sgemm_b(k, n);
    const std::vector<double> expected = sgemm_reference(a, b, m, n, k);
    for (const auto& [name, fn] : versions) {
      // One guard element past the end; written only by kernel threads (emu::KernelOutput).
      emu::KernelOutput<float> c(expected.size() + 1, kNaN, "C");
      fn(a.data(), b.data(), c.data(), m, n, k, nullptr);
      if (fn != lab02::sgemm_naive) recorded.record_all(c.data(), expected.size() + 1);
      const std::string bad = first_mismatch(expected, c.data(), 1e-4, 1e-5 * k);
      expect_no_mismatch(
          bad, ::testing::Message()
                   << name << ", M N K = " << m << " " << n << " " << k << " ("
                   << gtl::test_seed::describe() << ")"
                   << ": a wrong index, an edge (what may a tile entry past M, N or K add to "
                   << "C?), or a race on a shared tile (revisit: who writes each tile entry and "
                   << "who reads it, in one slice of K and the next)");
      if (!std::isnan(c.back()))
        ADD_FAILURE() << name << " wrote past the end of C (mask the stores)";
    }
  }
}

TEST(EmulatedBiasGelu, FusedAndUnfused) {
  gtl::judge::Outputs recorded("EmulatedBiasGelu.FusedAndUnfused");
  for (auto [rows, cols] : bias_gelu_cases()) {
    const std::vector<float> x = bias_gelu_x(rows, cols), bias = bias_gelu_bias(cols);
    const std::vector<double> expected = bias_gelu_reference(x, bias, cols);
    std::vector<float> tmp(x.size(), kNaN), y(x.size(), kNaN), fused(x.size(), kNaN);
    lab02::bias_gelu_unfused(x.data(), bias.data(), tmp.data(), y.data(), rows, cols, nullptr);
    expect_no_mismatch(first_mismatch(expected, y.data(), 1e-5, 1e-6), ::testing::Message()
                                                                           << "unfused (provided)");
    lab02::bias_gelu_fused(x.data(), bias.data(), fused.data(), rows, cols, nullptr);
    recorded.record_all(fused);
    expect_no_mismatch(first_mismatch(expected, fused.data(), 1e-5, 1e-6),
                       ::testing::Message() << "TODO 6 fused bias + GELU, " << rows << "x" << cols
                                            << ": y[i] = gelu(x[i] + bias[i % cols]) for every i "
                                               "(a grid-stride loop covers any size)");
  }
}

}  // namespace
