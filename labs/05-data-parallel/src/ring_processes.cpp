// The inputs and result files of lab05_ring_processes (provided, pristine; see ring_processes.h).
#include "ring_processes.h"

#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <random>

#include "gtl/runtime/error.h"

namespace lab05 {

std::vector<float> ring_process_input(uint64_t seed, int rank, int64_t n) {
  std::seed_seq seq{seed, static_cast<uint64_t>(rank), static_cast<uint64_t>(n)};
  std::mt19937_64 g(seq);
  std::uniform_int_distribution<int> value(-8, 8);
  std::vector<float> v(static_cast<std::size_t>(n));
  for (float& x : v) x = static_cast<float>(value(g));
  return v;
}

void write_ring_runs(const std::string& path, int world_size, const std::vector<RingRun>& runs) {
  std::ofstream out(path);
  GTL_CHECK(out.good(), "lab05_ring_processes: cannot write " << path);
  out << world_size << "\n";
  char hex[64];
  for (const RingRun& r : runs) {
    out << r.n << " " << r.bytes_sent << " " << r.bytes_received << "\n";
    for (const float x : r.values) {
      std::snprintf(hex, sizeof hex, "%a\n", static_cast<double>(x));
      out << hex;
    }
  }
  GTL_CHECK(out.good(), "lab05_ring_processes: writing " << path << " failed");
}

std::vector<RingRun> read_ring_runs(const std::string& path, int* world_size) {
  std::ifstream in(path);
  GTL_CHECK(in.good(), "no result file " << path);
  GTL_CHECK(static_cast<bool>(in >> *world_size), path << ": no world size");
  std::vector<RingRun> runs;
  RingRun r;
  while (in >> r.n >> r.bytes_sent >> r.bytes_received) {
    GTL_CHECK(r.n >= 0 && r.n <= (int64_t(1) << 24), path << ": a size of " << r.n);
    r.values.assign(static_cast<std::size_t>(r.n), 0.f);
    std::string word;
    for (float& x : r.values) {
      GTL_CHECK(static_cast<bool>(in >> word), path << ": fewer values than " << r.n);
      x = std::strtof(word.c_str(), nullptr);
    }
    runs.push_back(r);
  }
  return runs;
}

}  // namespace lab05
