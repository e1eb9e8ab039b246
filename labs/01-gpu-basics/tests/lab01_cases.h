// The inputs of lab 01's tests, shared by the tests and the lab's judge (judge/lab01_judge.cpp):
// the judge draws the same inputs from the grading seed and recomputes what the tests recorded
// (gtl_judge_output.h), without the student's code.
#pragma once

#include <cstdint>
#include <random>
#include <utility>
#include <vector>

#include "gtl/tensor/philox.h"
#include "gtl_test_seed.h"

namespace lab01_cases {

// Values in [-1, 1) from the core's counter-based generator: the same on every machine.
inline std::vector<float> random_vector(int64_t n, uint64_t seed) {
  std::vector<float> v(n);
  for (int64_t i = 0; i < n; ++i) v[i] = gtl::philox::uniform(seed, i) * 2.f - 1.f;
  return v;
}

// The emulated tests' inputs: a ramp with every value exact in float32.
inline std::vector<float> ramp(int64_t n, float scale) {
  std::vector<float> v(n);
  for (int64_t i = 0; i < n; ++i) v[i] = scale * static_cast<float>(i % 1000) - 3.f;
  return v;
}

// VectorAddCpu.SeededSizesAndAlignments: four rounds of a size, an offset (floats past an
// aligned address) and the arrays a, b of n + offset values.
struct VectorAddRound {
  int64_t n = 0, offset = 0;
  std::vector<float> a, b;
};
inline std::vector<VectorAddRound> seeded_vector_add_rounds() {
  std::mt19937_64 g = gtl::test_seed::generator("VectorAddCpu.SeededSizesAndAlignments");
  std::uniform_real_distribution<float> value(-1000.f, 1000.f);
  std::vector<VectorAddRound> rounds(4);
  for (auto& r : rounds) {
    r.n = gtl::test_seed::draw(g, 1, 1 << 18);
    r.offset = gtl::test_seed::draw(g, 0, 3);
    r.a.resize(r.n + r.offset), r.b.resize(r.n + r.offset);
    for (int64_t i = 0; i < r.n + r.offset; ++i) r.a[i] = value(g), r.b[i] = value(g);
  }
  return rounds;
}

// EmulatedVectorAdd.KernelCoversAnyN: sizes around the block (256), beyond the grid the solution
// launches, and one drawn from the grading seed.
inline std::vector<int64_t> emulated_vector_add_sizes() {
  std::mt19937_64 g = gtl::test_seed::generator("EmulatedVectorAdd.KernelCoversAnyN");
  return {0, 1, 5, 255, 256, 257, 300007, gtl::test_seed::draw(g, 1, 5000)};
}

// EmulatedStreamPipeline.ChunksCoverEveryElementOnce: (n, chunks), the last pair seeded.
inline std::vector<std::pair<int64_t, int>> emulated_pipeline_cases() {
  std::mt19937_64 g =
      gtl::test_seed::generator("EmulatedStreamPipeline.ChunksCoverEveryElementOnce");
  std::vector<std::pair<int64_t, int>> cases = {{1, 16},   {5, 8},     {10, 3},    {13, 12},
                                                {1000, 7}, {4096, 16}, {4099, 16}, {777, 1}};
  cases.push_back({gtl::test_seed::draw(g, 1, 5000), int(gtl::test_seed::draw(g, 1, 16))});
  return cases;
}

// ChooseDevice.AMissingGpuIsAnErrorThatSaysHowManyExist: how many GPUs past the last one.
inline int missing_gpu_distance() {
  std::mt19937_64 g = gtl::test_seed::generator("ChooseDevice.AMissingGpu");
  return int(gtl::test_seed::draw(g, 0, 6));
}

// The GPU tests' sizes (gpu_test.cpp).
inline const std::vector<int64_t>& gpu_vector_add_sizes() {
  static const std::vector<int64_t> sizes = {0, 1, 255, 256, 257, 1000003};
  return sizes;
}
inline const std::vector<std::pair<int64_t, int>>& gpu_pipeline_cases() {
  static const std::vector<std::pair<int64_t, int>> cases = {{1, 4},       {5, 8},   {1000003, 1},
                                                             {1000003, 3}, {13, 12}, {1 << 22, 16}};
  return cases;
}
constexpr int64_t kGridStrideN = (int64_t{1} << 26) + 5, kGridStridePad = 1024;

}  // namespace lab01_cases
