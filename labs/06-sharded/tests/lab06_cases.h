// Inputs of lab 06's seeded tests, shared by the tests and the lab's judge (judge/lab06_judge.cpp):
// both draw the same cases from the grading seed (gtl_test_seed.h), so the judge recomputes what
// the tests recorded (gtl_judge_output.h) on inputs the student's code could not know in advance.
// Every seeded test adds to the fixed cases of its check: the fixed ones keep the edge cases (5
// ranks for a model 5 does not divide, ranks that own only padding), the seeded ones change the
// sizes, the world, the model and the data every grading.
#pragma once

#include <cstdint>
#include <random>
#include <sstream>
#include <string>
#include <vector>

#include "gtl/distributed/trace_text.h"
#include "gtl_judge_output.h"
#include "gtl_test_seed.h"
#include "sharded_training.h"

namespace lab06_cases {

// ---- TODO 1: shard arithmetic -------------------------------------------------------------------
struct ShardCase {
  int64_t numel = 1;
  int world = 1;
};
// Four sizes up to 2^20 on 1 to 64 ranks, and two small sizes (fewer elements than ranks likely).
inline std::vector<ShardCase> seeded_shard_cases() {
  std::mt19937_64 g = gtl::test_seed::generator("ShardMath.SeededSizesAndWorldSizes");
  std::vector<ShardCase> cases(6);
  for (std::size_t i = 0; i < cases.size(); ++i) {
    cases[i].numel = gtl::test_seed::draw(g, 1, i < 4 ? int64_t{1} << 20 : 40);
    cases[i].world = static_cast<int>(gtl::test_seed::draw(g, 1, 64));
  }
  return cases;
}
// The elements whose owner the test asks for: both ends, both sides of every shard boundary, and
// eight drawn ones (indices into the padded buffer of `padded` elements).
inline std::vector<int64_t> owner_probes(const ShardCase& c, int64_t padded, int64_t shard) {
  std::mt19937_64 g = gtl::test_seed::generator("ShardMath.SeededOwners" + std::to_string(c.numel) +
                                                "/" + std::to_string(c.world));
  std::vector<int64_t> probes = {0, padded - 1};
  for (int r = 1; r < c.world; ++r) probes.insert(probes.end(), {r * shard - 1, r * shard});
  for (int k = 0; k < 8; ++k) probes.push_back(gtl::test_seed::draw(g, 0, padded - 1));
  return probes;
}

// ---- TODOs 2 to 6: a seeded model, world and data -----------------------------------------------
// A run of the harness whose model width, depth and seed, data seed and world size are drawn for
// `test`: the unit sizes, the padding and every weight change with the grading seed.
struct RunCase {
  int world = 2;
  lab06::TrainConfig config;
};
inline RunCase seeded_run(const std::string& test) {
  std::mt19937_64 g = gtl::test_seed::generator(test);
  RunCase c;
  c.world = static_cast<int>(gtl::test_seed::draw(g, 2, 5));
  c.config.model.hidden = gtl::test_seed::draw(g, 8, 40);
  c.config.model.blocks = gtl::test_seed::draw(g, 1, 3);
  c.config.model.seed = static_cast<uint64_t>(gtl::test_seed::draw(g, 1, 1 << 20));
  c.config.data_seed = static_cast<uint64_t>(gtl::test_seed::draw(g, 0, 1 << 20));
  return c;
}
inline std::string describe(const RunCase& c) {
  return "N " + std::to_string(c.world) + ", hidden " + std::to_string(c.config.model.hidden) +
         ", " + std::to_string(c.config.model.blocks) + " blocks, model seed " +
         std::to_string(c.config.model.seed) + ", data seed " + std::to_string(c.config.data_seed) +
         ", " + gtl::test_seed::describe();
}
// The batch of one FSDP step (fsdp_step.h) in the seeded order tests.
inline int64_t seeded_batch(const std::string& test) {
  std::mt19937_64 g = gtl::test_seed::generator(test + ".batch");
  return gtl::test_seed::draw(g, 1, 8);
}

// What a training test records for the judge: every rank's final weights and losses, bit for bit.
inline void record_runs(gtl::judge::Outputs& out, const std::vector<lab06::TrainResult>& runs) {
  for (const lab06::TrainResult& r : runs) {
    out.record_digest(r.weights.data(), r.weights.size());
    out.record_digest(r.losses.data(), r.losses.size());
  }
}
// What a traffic test records: one rank's calls of each collective and the bytes it sent, in the
// last step.
// A run's peak during its last step, with the raw allocations it is made of (the judge derives
// the peak from them, then checks its own figure).
inline void record_peak(gtl::judge::Outputs& out, const lab06::TrainResult& r) {
  out.record(r.peak_bytes);
  out.record(r.step_start_bytes);
  out.record_all(r.step_events);
}

inline int64_t calls(const lab06::TrainResult& r, const std::string& op) {
  return r.step_counters.count(op) ? r.step_counters.at(op).calls : int64_t{0};
}
inline int64_t bytes_sent(const lab06::TrainResult& r) {
  int64_t sent = 0;
  for (const auto& [op, counters] : r.step_counters) sent += counters.bytes_sent;
  return sent;
}
inline void record_traffic(gtl::judge::Outputs& out, const lab06::TrainResult& r) {
  for (const char* op : {"all_reduce", "reduce_scatter", "all_gather"}) out.record(calls(r, op));
  out.record(bytes_sent(r));
}

// The GPU check (gpu_test.cpp, which explains the figure): each step's loss on the GPU within this
// relative tolerance of the CPU's (GEMM rounding; the judge compares with DDP's CPU losses).
constexpr double kGpuLossRtol = 1e-4;

// What an order test records: lines of text (fsdp_step.h's timeline), one per line.
inline void record_lines(gtl::judge::Outputs& out, const std::vector<std::string>& lines) {
  out.record(lines.size());
  for (const std::string& line : lines) out.record(line);
}
// What a test of the units held records: at each hook rank 0 saw (fsdp_step.h's Seen), the hook,
// the unit, and the units with full values and with a full gradient.
template <typename Seen>
void record_seen(gtl::judge::Outputs& out, const std::vector<Seen>& seen) {
  out.record(seen.size());
  for (const Seen& s : seen) {
    out.record(s.hook);
    out.record(s.unit);
    out.record_all(s.with_values);
    out.record_all(s.with_grads);
  }
}

// Every rank's trace (TODO 5's timeline on the reference cluster), one line per event in the
// core's text form (gtl/distributed/trace_text.h: every field the cost model reads): the judge
// checks the traces hold the step's work and collectives, and simulates the timeline itself with
// the core's cost model.
inline void record_traces(gtl::judge::Outputs& out,
                          const std::vector<std::vector<gtl::dist::TraceEvent>>& traces) {
  out.record(traces.size());
  for (const auto& events : traces) {
    out.record(events.size());
    for (const gtl::dist::TraceEvent& e : events) out.record(gtl::dist::trace_event_line(e));
  }
}

// ---- TODO 6 on its own: known shards and AdamW state --------------------------------------------
// The unit-level checkpoint tests fill every shard with a value that encodes (unit, element of the
// unit's flat buffer) above a base drawn from the seed, and AdamW's m and v with values of (rank,
// tensor, element): the judge recomputes from these what each file holds, what a load restores
// and what consolidate writes. All are exact in float (below 2^24).
inline int64_t seeded_value_base(const std::string& test) {
  std::mt19937_64 g = gtl::test_seed::generator(test + ".values");
  return gtl::test_seed::draw(g, 0, 1 << 20);
}
// Element i of unit u's flat buffer of `numel` real elements; 0 for padding.
inline float unit_value(int64_t base, std::size_t u, int64_t i, int64_t numel) {
  return i < numel ? static_cast<float>(base + 100000 * int64_t(u + 1) + i) : 0.0f;
}
// Element j of tensor k of the optimizer state (m and v of each shard param, in order) of `rank`.
inline float optimizer_value(int rank, std::size_t k, std::size_t j) {
  return 0.5f + static_cast<float>(rank) + 0.25f * static_cast<float>(k) +
         static_cast<float>(j) / 1024.0f;
}

// ---- TODO 7: clipping and skipping over shards --------------------------------------------------
struct ClipCase {
  int world = 1;
  float max_norm = 1.f;
  std::vector<float> grad;  // the whole gradient: halves of small integers (exact squares)
};
inline std::vector<ClipCase> seeded_clip_cases() {
  std::mt19937_64 g = gtl::test_seed::generator("ClipOverShards.SeededGradientsWorldsAndMaxNorms");
  std::vector<ClipCase> cases(4);
  for (ClipCase& c : cases) {
    c.world = static_cast<int>(gtl::test_seed::draw(g, 1, 6));
    c.max_norm = 0.25f * static_cast<float>(gtl::test_seed::draw(g, 1, 400));
    c.grad.resize(static_cast<std::size_t>(gtl::test_seed::draw(g, 1, 300)));
    for (float& v : c.grad) v = 0.5f * static_cast<float>(gtl::test_seed::draw(g, -20, 20));
  }
  return cases;
}

struct InfCase {
  int world = 2;
  int overflow = -1;  // the rank whose shard holds an inf, -1: none
  int64_t numel = 1;
};
inline std::vector<InfCase> seeded_inf_cases() {
  std::mt19937_64 g = gtl::test_seed::generator("AgreeFoundInf.SeededWorldsAndOverflowingRanks");
  std::vector<InfCase> cases(4);
  for (InfCase& c : cases) {
    c.world = static_cast<int>(gtl::test_seed::draw(g, 2, 6));
    c.overflow = static_cast<int>(gtl::test_seed::draw(g, -1, c.world - 1));
    c.numel = gtl::test_seed::draw(g, 1, 40);
  }
  return cases;
}

}  // namespace lab06_cases
