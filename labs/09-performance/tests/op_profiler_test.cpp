// Lab 09, TODO 1: your profiler (op_profiler.h) on the nested net, on the CPU emulator's H100
// (label cpu), where launches, host synchronisations and allocations are counted exactly as on a
// GPU, and on a GPU (label gpu, the same source). The tests check what holds whatever the model;
// the judge (judge/lab09_profiler_judge.cpp) reruns the course's profiler on the same nets and
// compares every op the tests recorded.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "gtl/runtime/host_sync.h"
#include "gtl/runtime/launch_count.h"
#include "gtl_judge_output.h"
#include "gtl_test.h"
#include "lab09_profiler_cases.h"
#include "op_profiler.h"

namespace {

const gtl::Device kGpu = gtl::Device::cuda(0);

std::string op_line(const lab09::OpRecord& op) {
  return op.path + " " + op.kind + " " + op.pass + " step " + std::to_string(op.step);
}

// A warm-up step and `steps` recorded steps of `net` under `p`.
void profile(lab09::OpProfiler& p, lab09::NestedNet& net, int64_t steps) {
  for (int64_t i = 0; i <= steps; ++i) {
    p.begin_step();
    net.step(i);
    p.end_step();
  }
}

// The ops of each recorded step, in order; fails unless every op's step is a recorded one.
std::vector<std::vector<lab09::OpRecord>> by_step(const lab09::OpProfiler& p,
                                                  const std::string& what) {
  std::vector<std::vector<lab09::OpRecord>> steps(p.steps().size());
  for (const lab09::OpRecord& op : p.ops()) {
    EXPECT_TRUE(op.step >= 0 && op.step < static_cast<int64_t>(steps.size()))
        << what << ": op " << op_line(op) << " names step " << op.step << ", but " << steps.size()
        << " steps were recorded (TODO 1a)";
    if (op.step >= 0 && op.step < static_cast<int64_t>(steps.size()))
      steps[static_cast<size_t>(op.step)].push_back(op);
  }
  return steps;
}

TEST(OpProfiler, RecordsEveryOpOnceWithItsCost) {
  GTL_REQUIRE_GPU();
  gtl::judge::Outputs out("OpProfiler.RecordsEveryOpOnceWithItsCost");
  for (const lab09_profiler_cases::NetCase& c : lab09_profiler_cases::net_cases()) {
    lab09::NestedNet net(c.net, kGpu);
    lab09::OpProfiler p(net.model(), kGpu);
    profile(p, net, c.steps);
    p.finish();
    ASSERT_EQ(static_cast<int64_t>(p.steps().size()), c.steps)
        << c.what << ": a warm-up step and " << c.steps << " recorded steps; the warm-up is not "
        << "recorded (TODO 1a, the warm-up)";
    const auto steps = by_step(p, c.what);
    out.record(p.ops().size());
    for (const lab09::OpRecord& op : p.ops()) {
      out.record(op_line(op));
      out.record(op.cost.flops);
      out.record(op.cost.bytes);
    }
    ASSERT_FALSE(p.ops().empty()) << c.what << ": no op was recorded (TODO 1a)";
    for (size_t s = 1; s < steps.size(); ++s) {
      ASSERT_EQ(steps[s].size(), steps[0].size())
          << c.what << ": every step runs the same ops, but step " << s << " has "
          << steps[s].size() << " and step 0 has " << steps[0].size() << " (TODO 1a)";
      for (size_t k = 0; k < steps[0].size(); ++k)
        EXPECT_EQ(steps[s][k].path + " " + steps[s][k].pass,
                  steps[0][k].path + " " + steps[0][k].pass)
            << c.what << ": op " << k << " of step " << s << " (TODO 1a)";
    }
  }
}

TEST(OpProfiler, LaunchesAndBytesAreEachOpsOwn) {
  GTL_REQUIRE_GPU();
  gtl::judge::Outputs out("OpProfiler.LaunchesAndBytesAreEachOpsOwn");
  for (const lab09_profiler_cases::NetCase& c : lab09_profiler_cases::net_cases()) {
    lab09::NestedNet net(c.net, kGpu);
    lab09::OpProfiler p(net.model(), kGpu);
    std::vector<int64_t> launched;  // counted around each recorded step
    for (int64_t i = 0; i <= c.steps; ++i) {
      p.begin_step();
      const gtl::LaunchCounts before = gtl::launch_counts();
      net.step(i);
      const gtl::LaunchCounts in_step = gtl::launch_counts() - before;
      p.end_step();
      if (i > 0) launched.push_back(in_step.kernels + in_step.library);
    }
    p.finish();
    ASSERT_EQ(p.steps().size(), launched.size())
        << c.what << ": recorded steps (the warm-up is not one) (TODO 1a)";
    const auto steps = by_step(p, c.what);
    out.record(p.ops().size());
    for (const lab09::OpRecord& op : p.ops()) {
      out.record(op_line(op));
      out.record(op.launches.kernels);
      out.record(op.launches.library);
      out.record(op.allocated_bytes);
    }
    for (size_t s = 0; s < steps.size(); ++s) {
      int64_t sum = 0;
      for (const lab09::OpRecord& op : steps[s]) sum += op.launches.kernels + op.launches.library;
      EXPECT_EQ(sum, launched[s])
          << c.what << ": the ops of step " << s << " add up to " << sum << " launches, but the "
          << "step launched " << launched[s] << ". Each launch of the forward and the backward "
          << "belongs to exactly one op: a "
          << "container's hooks bracket its children's launches too, and an op's launches are "
          << "the difference between its two hooks (TODO 1a, which modules are ops)";
    }
  }
}

TEST(OpProfiler, AddsNoHostSyncPerOp) {
  GTL_REQUIRE_GPU();
  gtl::judge::Outputs out("OpProfiler.AddsNoHostSyncPerOp");
  for (const lab09_profiler_cases::NetCase& c : lab09_profiler_cases::net_cases()) {
    lab09::NestedNet plain(c.net, kGpu), profiled(c.net, kGpu);
    gtl::HostSyncCounts before = gtl::host_sync_counts();
    for (int64_t i = 0; i <= c.steps; ++i) plain.step(i);
    const int64_t without = (gtl::host_sync_counts() - before).total();

    lab09::OpProfiler p(profiled.model(), kGpu);
    before = gtl::host_sync_counts();
    profile(p, profiled, c.steps);
    const int64_t with = (gtl::host_sync_counts() - before).total();
    before = gtl::host_sync_counts();
    p.finish();
    p.finish();
    const int64_t at_finish = (gtl::host_sync_counts() - before).total();
    int64_t in_ops = 0;
    for (const lab09::OpRecord& op : p.ops()) in_ops += op.syncs.total();
    out.record(without);
    out.record(with);
    ASSERT_FALSE(p.ops().empty()) << c.what << ": no op was recorded, so nothing was measured "
                                  << "(TODO 1a)";
    out.record(at_finish);
    out.record(in_ops);
    EXPECT_EQ(with, without) << c.what << ": the steps waited for the GPU " << without
                             << " times without the profiler and " << with << " times with "
                             << "it: a profile that waits changes the step it measures (TODO 1a, "
                             << "host vs device time)";
    EXPECT_LE(at_finish, 1) << c.what << ": finish() (called twice) waited " << at_finish
                            << " times; it may wait at most once (TODO 1a)";
    EXPECT_EQ(in_ops, 0) << c.what << ": the ops themselves wait for nothing, but the profiler "
                         << "counted " << in_ops << " host waits inside them (TODO 1a)";
  }
}

TEST(OpProfiler, TwoRunsInARowStartAfresh) {
  GTL_REQUIRE_GPU();
  gtl::judge::Outputs out("OpProfiler.TwoRunsInARowStartAfresh");
  const lab09_profiler_cases::NetCase c = lab09_profiler_cases::net_cases().back();
  lab09::NestedNet net(c.net, kGpu);
  lab09::OpProfiler p(net.model(), kGpu);
  profile(p, net, c.steps);
  p.finish();
  const size_t first_ops = p.ops().size();
  ASSERT_EQ(static_cast<int64_t>(p.steps().size()), c.steps)
      << c.what << ", first run: " << c.steps << " steps after the warm-up (TODO 1a, the warm-up)";
  p.reset();
  profile(p, net, c.steps + 1);
  p.finish();
  out.record(first_ops);
  out.record(p.steps().size());
  out.record(p.ops().size());
  for (const lab09::OpRecord& op : p.ops()) {
    out.record(op_line(op));
    out.record(op.launches.kernels + op.launches.library);
  }
  ASSERT_EQ(static_cast<int64_t>(p.steps().size()), c.steps + 1)
      << c.what << ", second run after reset(): a new warm-up and " << c.steps + 1
      << " recorded steps, none of the first run's (TODO 1a, reset)";
  EXPECT_EQ(p.ops().size() * static_cast<size_t>(c.steps),
            first_ops * static_cast<size_t>(c.steps + 1))
      << c.what << ": the first run recorded " << first_ops << " ops in " << c.steps
      << " steps, the second " << p.ops().size() << " in " << c.steps + 1
      << "; every step runs the same ops (TODO 1a, reset)";
}

TEST(KeyAverages, SeededRowsByTotalTime) {
  gtl::judge::Outputs out("KeyAverages.SeededRowsByTotalTime");
  const std::vector<lab09::OpRecord> ops = lab09_profiler_cases::seeded_records();
  const std::vector<lab09::OpRow> rows = lab09::key_averages(ops);
  out.record(rows.size());
  int64_t calls = 0;
  for (const lab09::OpRow& r : rows) {
    out.record(r.key);
    out.record(r.calls);
    out.record(r.total_us);
    out.record(r.flops);
    out.record(r.bytes);
    out.record(r.allocated_bytes);
    out.record(r.launches);
    calls += r.calls;
  }
  EXPECT_EQ(calls, static_cast<int64_t>(ops.size()))
      << "the rows' calls add up to " << calls << ", but there were " << ops.size()
      << " ops: every op is in exactly one row (TODO 1b)";
  for (size_t i = 1; i < rows.size(); ++i) {
    const lab09::OpRow &a = rows[i - 1], &b = rows[i];
    EXPECT_TRUE(a.total_us > b.total_us || (a.total_us == b.total_us && a.key < b.key))
        << "row " << i - 1 << " (" << a.key << ", " << a.total_us << " us, " << a.calls
        << " calls) comes before row " << i << " (" << b.key << ", " << b.total_us << " us, "
        << b.calls << " calls): rows go by total time, largest first, equal totals by key "
        << "(TODO 1b, key_averages)";
  }
  std::printf("%s", lab09::format_table(rows).c_str());
}

TEST(ChromeTrace, WellFormedWithEveryOpInsideItsStep) {
  GTL_REQUIRE_GPU();
  gtl::judge::Outputs out("ChromeTrace.WellFormedWithEveryOpInsideItsStep");
  const lab09_profiler_cases::NetCase c = lab09_profiler_cases::net_cases().back();
  lab09::NestedNet net(c.net, kGpu);
  lab09::OpProfiler p(net.model(), kGpu);
  profile(p, net, c.steps);
  p.finish();
  const std::string text = lab09::chrome_trace(p.ops(), p.steps());
  const nlohmann::json trace = nlohmann::json::parse(text, nullptr, false);
  ASSERT_FALSE(trace.is_discarded()) << "chrome_trace is not valid JSON (TODO 1c)";
  ASSERT_TRUE(trace.is_object() && trace.contains("traceEvents") && trace["traceEvents"].is_array())
      << "a Chrome trace is an object with a \"traceEvents\" array (TODO 1c)";
  std::vector<std::pair<double, double>> step_spans;
  std::vector<nlohmann::json> op_events;
  for (const nlohmann::json& e : trace["traceEvents"]) {
    if (!e.is_object() || e.value("ph", "") != "X") continue;
    ASSERT_TRUE(e.contains("ts") && e["ts"].is_number() && e.contains("dur") &&
                e["dur"].is_number() && e.contains("name") && e["name"].is_string())
        << "a complete event has a name, \"ts\" and \"dur\": " << e.dump() << " (TODO 1c)";
    EXPECT_GE(e["dur"].get<double>(), 0) << "a negative duration: " << e.dump() << " (TODO 1c)";
    const std::string name = e["name"].get<std::string>();
    if (name.rfind("step ", 0) == 0)
      step_spans.emplace_back(e["ts"].get<double>(), e["dur"].get<double>());
    else
      op_events.push_back(e);
  }
  out.record(step_spans.size());
  out.record(op_events.size());
  for (const nlohmann::json& e : op_events) {
    out.record(e["name"].get<std::string>());
    out.record(e.contains("args") ? e["args"].value("flops", -1.0) : -1.0);
  }
  ASSERT_EQ(step_spans.size(), p.steps().size()) << "one \"step <n>\" event per step (TODO 1c)";
  ASSERT_EQ(op_events.size(), p.ops().size()) << "one event per op (TODO 1c)";
  for (size_t k = 0; k < op_events.size(); ++k) {
    const lab09::OpRecord& op = p.ops()[k];
    const auto [start, dur] = step_spans[static_cast<size_t>(op.step)];
    const double ts = op_events[k]["ts"].get<double>(),
                 end = ts + op_events[k]["dur"].get<double>();
    EXPECT_TRUE(ts >= start && end <= start + dur)
        << op_events[k].dump() << " lies outside step " << op.step + 1 << " [" << start << ", "
        << start + dur << "] us: a step's events and its ops' share one clock (TODO 1c)";
  }
}

// The device's own clock, read through events (on the emulator, its events' clock).
TEST(OpProfiler, DeviceTimesAfterFinish) {
  GTL_REQUIRE_GPU();
  const lab09_profiler_cases::NetCase c = lab09_profiler_cases::net_cases().front();
  lab09::NestedNet net(c.net, kGpu);
  lab09::OpProfiler p(net.model(), kGpu);
  profile(p, net, c.steps);
  p.finish();
  ASSERT_FALSE(p.ops().empty()) << "no op was recorded (TODO 1a)";
  for (const lab09::OpRecord& op : p.ops())
    EXPECT_GE(op.device_us, 0) << op_line(op) << ": no device time after finish() (TODO 1a)";
}

}  // namespace
