// TODO 7 across real processes (provided, pristine): the gradient lab06_clip_processes shards
// over its ranks and the file each of its ranks writes, shared by the program
// (src/clip_processes_main.cpp), its test (mpi_launch_test.cpp) and the lab's judge.
//
// Why real processes: in-process ranks are threads of one address space, so agree_found_inf and
// clip_sharded_grad_norm_ could make the expected all-reduce of one element, bytes and all, and
// still take the other ranks' flags and squared norms from a global (decision_traffic_problem in
// sharded_clip_test.cpp cannot see it). Processes share no memory: under mpirun only what
// travels through the communicator arrives.
#pragma once

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <random>
#include <string>
#include <vector>

#include "gtl/runtime/error.h"

namespace lab06_clip_processes {

// Three processes, each clipping by max norm 1.
constexpr int kWorld = 3;
constexpr float kMaxNorm = 1.f;

// The whole gradient of `seed`: 7 to 300 elements (each of the 3 ranks owns a real one), each
// 0.5 k with k in [-20, -1] or [1, 20]. No element is zero, so every rank's shard adds to the
// global norm, which is at least 0.5 sqrt(7) > kMaxNorm: the clip always scales.
inline std::vector<float> gradient(uint64_t seed) {
  std::seed_seq seq{seed, uint64_t{7}};
  std::mt19937_64 g(seq);
  std::uniform_int_distribution<int> numel(7, 300), k(1, 20), sign(0, 1);
  std::vector<float> grad(static_cast<std::size_t>(numel(g)));
  for (float& v : grad) v = 0.5f * static_cast<float>(sign(g) != 0 ? k(g) : -k(g));
  return grad;
}

// The skip decisions, in this order: no shard overflows, then rank 0's, 1's, ..., kWorld - 1's
// (an inf in its shard's first element).
inline std::vector<int> overflow_cases() {
  std::vector<int> cases = {-1};
  for (int r = 0; r < kWorld; ++r) cases.push_back(r);
  return cases;
}

// What one rank holds afterwards: the norm clip_sharded_grad_norm_ returned, its shard clipped,
// and per overflow case whether its scaler stepped (1) or skipped (0).
struct RankResult {
  int world_size = 0;
  float norm = 0.f;
  std::vector<float> clipped;
  std::vector<int> stepped;
};

// The file of one rank: its world size, the stepped flags, the norm, then the clipped shard
// (floats in hex: exact).
inline void write_result(const std::string& path, const RankResult& r) {
  std::ofstream out(path);
  GTL_CHECK(out.good(), "lab06_clip_processes: cannot write " << path);
  out << r.world_size << " " << r.stepped.size();
  for (int s : r.stepped) out << " " << s;
  char hex[64];
  std::snprintf(hex, sizeof hex, "%a", static_cast<double>(r.norm));
  out << "\n" << hex << "\n" << r.clipped.size() << "\n";
  for (float x : r.clipped) {
    std::snprintf(hex, sizeof hex, "%a\n", static_cast<double>(x));
    out << hex;
  }
  GTL_CHECK(out.good(), "lab06_clip_processes: writing " << path << " failed");
}

inline RankResult read_result(const std::string& path) {
  std::ifstream in(path);
  GTL_CHECK(in.good(), "no result file " << path);
  RankResult r;
  std::size_t steps = 0, n = 0;
  GTL_CHECK(static_cast<bool>(in >> r.world_size >> steps) && steps <= 64,
            path << ": no world size and decisions");
  r.stepped.assign(steps, 0);
  for (int& s : r.stepped) GTL_CHECK(static_cast<bool>(in >> s), path << ": a decision missing");
  std::string word;
  GTL_CHECK(static_cast<bool>(in >> word), path << ": no norm");
  r.norm = std::strtof(word.c_str(), nullptr);
  GTL_CHECK(static_cast<bool>(in >> n) && n <= 300, path << ": no shard size");
  r.clipped.assign(n, 0.f);
  for (float& x : r.clipped) {
    GTL_CHECK(static_cast<bool>(in >> word), path << ": fewer values than " << n);
    x = std::strtof(word.c_str(), nullptr);
  }
  return r;
}

}  // namespace lab06_clip_processes
