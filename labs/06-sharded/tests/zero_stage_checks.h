// The checks ZeRO-1 and ZeRO-2 share (zero1_test.cpp, zero2_test.cpp), parametrised by the stage:
// it trains bit for bit like DDP, each rank's persistent bytes are exactly the stage's formula,
// and one step moves exactly what DDP's all-reduce moves. Each on the lab model for N = 1..5 (or
// 2, 3, 5) and on a seeded model, data seed and world size.
//
// Why one header: the two stages differ only in what a rank keeps between steps (ZeRO-2 also
// shards the gradient), so the checks are the same code; each test file names its stage and
// explains its own memory formula and its fixes (ZeroStage), and keeps its tests' names. Each
// check records for the judge (gtl::judge::Outputs, under the running test's name) exactly what
// the judge reads back, in the same order for both stages.
#pragma once

#include <gtest/gtest.h>

#include <cstdint>
#include <iostream>
#include <string>
#include <vector>

#include "lab06_cases.h"
#include "lab06_test_util.h"

namespace lab06::testing {

// What a ZeRO stage's checks say about it.
struct ZeroStage {
  Stage stage;
  std::string name;  // "ZeRO-1", the subject of every message
  // What to revisit when a run does not match DDP's: the concepts, never the code.
  std::string revisit;
  // What a rank keeps between steps, "4P (values) + ...": "<name> keeps <keeps> (P = ...)".
  std::string keeps;
  // The usual mistakes behind wrong persistent bytes, after the bytes got.
  std::string memory_mistakes;
  // Why there is no all-reduce: "<name> <why>".
  std::string why_no_all_reduce;
};

// "Suite.Name" of the running test: the name its outputs are recorded under for the judge.
inline std::string running_test() {
  const ::testing::TestInfo* info = ::testing::UnitTest::GetInstance()->current_test_info();
  return std::string(info->test_suite_name()) + "." + info->name();
}

// The stage trained on the seeded model, data and world size drawn for the running test, with
// what its checks need: the case, the model's P, each rank's result, the judge's outputs.
struct SeededZeroRun {
  explicit SeededZeroRun(const ZeroStage& z)
      : test(running_test()),
        out(test),
        c(lab06_cases::seeded_run(test)),
        p(model_numel(c.config.model)),
        zero(run(c.world, z.stage, c.config)) {}
  const std::string test;
  gtl::judge::Outputs out;
  const lab06_cases::RunCase c;
  const int64_t p;
  const std::vector<TrainResult> zero;
};

// The equivalence checks verify the communication too (ranks are threads, so
// DDP's weights could come from another rank's memory through a global): with N > 1, a step of
// ZeRO-1 or ZeRO-2 sends on each rank what DDP's all-reduce of the padded buffer sends,
// 2 (N-1) shards of ceil(P / N) floats (ddp_bytes_sent), whatever collectives carry it.
inline std::string stage_traffic_problem(const TrainResult& zero, int64_t p, int n, int r,
                                         const std::string& name) {
  if (n == 1) return "";
  const int64_t sent = lab06_cases::bytes_sent(zero), expected = testing::ddp_bytes_sent({p}, n);
  if (sent == expected) return "";
  return "N " + std::to_string(n) + ", rank " + std::to_string(r) + ": " + name + " sent " +
         std::to_string(sent) + " bytes in a step, expected " + std::to_string(expected) +
         " (what DDP's ring all-reduce of the padded buffer sends: 2 (N-1) shards). Revisit "
         "the step: gradients and weights must travel through the communicator, not through "
         "memory another rank can read";
}

inline void expect_trains_like_ddp_on_one_to_five_ranks(const ZeroStage& z) {
  gtl::judge::Outputs out(running_test());
  for (int n = 1; n <= 5; ++n) {
    const std::vector<TrainResult> ddp = run(n, Stage::Ddp);
    const std::vector<TrainResult> zero = run(n, z.stage);
    lab06_cases::record_runs(out, zero);
    for (int r = 0; r < n; ++r) {
      EXPECT_EQ(bitwise_diff(zero[r].weights, ddp[r].weights), "")
          << "N " << n << ", rank " << r << ": " << z.name
          << "'s weights after 3 steps differ from DDP's. " << z.revisit;
      EXPECT_EQ(bitwise_diff(zero[r].losses, ddp[r].losses), "") << "N " << n << ", rank " << r;
      EXPECT_EQ(stage_traffic_problem(zero[r], model_numel(lab_model()), n, r, z.name), "");
    }
  }
}

inline void expect_its_persistent_bytes_on_one_to_five_ranks(const ZeroStage& z) {
  gtl::judge::Outputs out(running_test());
  const int64_t p = model_numel(lab_model());
  for (int n = 1; n <= 5; ++n) {
    const std::vector<TrainResult> zero = run(n, z.stage);
    std::cout << "[ figures  ] " << stage_name(z.stage) << ", N " << n
              << ": persistent bytes rank 0 " << zero[0].persistent_bytes << ", peak "
              << zero[0].peak_bytes << "\n";
    for (int r = 0; r < n; ++r) {
      out.record(zero[r].persistent_bytes);
      const int64_t expected = expected_persistent_bytes(z.stage, {p}, n, r);
      EXPECT_EQ(zero[r].persistent_bytes, expected)
          << "N " << n << ", rank " << r << ": " << z.name << " keeps " << z.keeps << " (P = " << p
          << " padded to a multiple of N); got " << zero[r].persistent_bytes << " bytes. "
          << z.memory_mistakes;
    }
  }
}

inline void expect_ddp_traffic_on_two_three_five_ranks(const ZeroStage& z) {
  gtl::judge::Outputs out(running_test());
  const int64_t p = model_numel(lab_model());
  for (int n : {2, 3, 5}) {
    const std::vector<TrainResult> zero = run(n, z.stage);
    for (int r = 0; r < n; ++r) {
      lab06_cases::record_traffic(out, zero[r]);
      const auto calls = [&](const std::string& op) { return lab06_cases::calls(zero[r], op); };
      EXPECT_EQ(calls("all_reduce"), 0)
          << "N " << n << ", rank " << r << ": " << z.name << " " << z.why_no_all_reduce;
      const int64_t sent = lab06_cases::bytes_sent(zero[r]);
      EXPECT_EQ(sent, testing::ddp_bytes_sent({p}, n))
          << "N " << n << ", rank " << r << ": bytes sent in a step, expected what DDP's "
          << "all-reduce of the padded buffer sends (lab 05's ring)";
    }
  }
}

inline void expect_trains_like_ddp_on_a_seeded_run(const ZeroStage& z) {
  SeededZeroRun s(z);
  const std::vector<TrainResult>& zero = s.zero;
  const std::vector<TrainResult> ddp = run(s.c.world, Stage::Ddp, s.c.config);
  lab06_cases::record_runs(s.out, zero);
  for (int r = 0; r < s.c.world; ++r) {
    EXPECT_EQ(bitwise_diff(zero[r].weights, ddp[r].weights), "")
        << lab06_cases::describe(s.c) << ", rank " << r << ": " << z.name
        << "'s weights differ from DDP's";
    EXPECT_EQ(bitwise_diff(zero[r].losses, ddp[r].losses), "")
        << lab06_cases::describe(s.c) << ", rank " << r << ": " << z.name
        << "'s losses differ from DDP's";
    EXPECT_EQ(stage_traffic_problem(zero[r], s.p, s.c.world, r, z.name), "");
  }
}

inline void expect_its_persistent_bytes_on_a_seeded_run(const ZeroStage& z) {
  SeededZeroRun s(z);
  const int64_t p = s.p;
  const std::vector<TrainResult>& zero = s.zero;
  for (int r = 0; r < s.c.world; ++r) {
    s.out.record(zero[r].persistent_bytes);
    EXPECT_EQ(zero[r].persistent_bytes, expected_persistent_bytes(z.stage, {p}, s.c.world, r))
        << lab06_cases::describe(s.c) << ", rank " << r << " (P = " << p
        << "): persistent bytes differ from the " << z.name << " formula";
  }
}

inline void expect_ddp_traffic_on_a_seeded_run(const ZeroStage& z) {
  SeededZeroRun s(z);
  const int64_t p = s.p;
  const std::vector<TrainResult>& zero = s.zero;
  for (int r = 0; r < s.c.world; ++r) {
    lab06_cases::record_traffic(s.out, zero[r]);
    EXPECT_EQ(lab06_cases::calls(zero[r], "all_reduce"), 0) << lab06_cases::describe(s.c);
    EXPECT_EQ(lab06_cases::bytes_sent(zero[r]), testing::ddp_bytes_sent({p}, s.c.world))
        << lab06_cases::describe(s.c) << ", rank " << r << " (P = " << p
        << "): bytes sent in a step, expected what DDP's all-reduce of the padded buffer sends";
  }
}

}  // namespace lab06::testing
