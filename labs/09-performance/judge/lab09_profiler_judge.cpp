// Lab 09's judge of TODO 1, the profiler (docs/grader.md, "The judge"): built from the course
// alone (the lab's headers, the nested net, the tests' case header, the core), never from the
// student's files. It draws the same nets from the grading seed, profiles the same steps with the
// course's own profiler (gtl::nn::Profiler, the demo's `train --profile`) and compares:
//   profiler-ops     every op (path, kind, pass, step) in order, its FLOPs and bytes
//   profiler-counts  every op's kernel launches, library calls and allocated bytes
//   profiler-syncs   the host synchronisations of the plain steps, rerun; none added per op
//   profiler-runs    the second run after reset(): its steps, ops and launches
//   profiler-table   key_averages of the seeded ops, recomputed row by row
//   profiler-trace   the trace's steps and ops, by name and FLOPs, in order
// Built twice (labs/09-performance/CMakeLists.txt): lab09_profiler_judge on the core (the GPU
// check) and lab09_profiler_emulated_judge on the emulated core (the emulated checks).
#include <algorithm>
#include <map>
#include <string>
#include <vector>

#include "gtl/nn/profiler.h"
#include "gtl/runtime/host_sync.h"
#include "gtl_judge.h"
#include "lab09_profiler_cases.h"
#include "op_profiler.h"

namespace {

using gtl::judge::Recorded;
using gtl::judge::Rejection;

const gtl::Device kGpu = gtl::Device::cuda(0);

struct Call {
  std::string line;  // "path kind pass step s", as the tests record it
  gtl::nn::ProfiledCall call;
};

// The course's profiler on a warm-up step and `steps` recorded steps of the case's net.
std::vector<Call> reference(const lab09::NestedNetConfig& config, int64_t steps) {
  lab09::NestedNet net(config, kGpu);
  gtl::nn::Profiler profiler(net.model(), kGpu);
  net.step(0);
  profiler.clear();
  std::vector<size_t> ends;
  for (int64_t i = 1; i <= steps; ++i) {
    net.step(i);
    ends.push_back(profiler.calls().size());
  }
  profiler.finish();
  std::vector<Call> calls;
  for (size_t k = 0; k < profiler.calls().size(); ++k) {
    const auto& c = profiler.calls()[k];
    const int64_t step = std::upper_bound(ends.begin(), ends.end(), k) - ends.begin();
    calls.push_back({c.path + " " + c.kind + " " + c.pass + " step " + std::to_string(step), c});
  }
  return calls;
}

const char* kWhichOps =
    " (an op is a module that does the work: a container's hooks bracket its children's, "
    "TODO 1a)";

void expect_ops(Recorded& r, const std::vector<Call>& want, const std::string& what) {
  gtl::judge::expect_equal(r.next<size_t>("the number of ops"), want.size(),
                           r.test() + ", " + what + ": the number of ops" + kWhichOps);
}

void expect_op(Recorded& r, const Call& want, size_t k, const std::string& what) {
  const std::string got = r.line("an op");
  if (got != want.line)
    throw Rejection(r.test() + ", " + what + ": op " + std::to_string(k) + " is \"" + got +
                    "\", the judge's \"" + want.line + "\"" + kWhichOps);
}

std::string profiler_ops() {
  Recorded r("OpProfiler.RecordsEveryOpOnceWithItsCost");
  for (const auto& c : lab09_profiler_cases::net_cases()) {
    const std::vector<Call> want = reference(c.net, c.steps);
    expect_ops(r, want, c.what);
    for (size_t k = 0; k < want.size(); ++k) {
      expect_op(r, want[k], k, c.what);
      const std::string op = r.test() + ", " + c.what + ", " + want[k].line;
      gtl::judge::expect_equal(r.next<double>("flops"), want[k].call.cost.flops,
                               op + ": FLOPs (its own cost for its pass, TODO 1a)");
      gtl::judge::expect_equal(r.next<double>("bytes"), want[k].call.cost.bytes,
                               op + ": bytes (its own cost for its pass, TODO 1a)");
    }
  }
  return "every op of every step, with the cost model's FLOPs and bytes";
}

std::string profiler_counts() {
  Recorded r("OpProfiler.LaunchesAndBytesAreEachOpsOwn");
  for (const auto& c : lab09_profiler_cases::net_cases()) {
    const std::vector<Call> want = reference(c.net, c.steps);
    expect_ops(r, want, c.what);
    for (size_t k = 0; k < want.size(); ++k) {
      expect_op(r, want[k], k, c.what);
      const std::string op = r.test() + ", " + c.what + ", " + want[k].line;
      gtl::judge::expect_equal(r.next<int64_t>("kernels"), want[k].call.launches.kernels,
                               op + ": kernel launches between its hooks (TODO 1a)");
      gtl::judge::expect_equal(r.next<int64_t>("library"), want[k].call.launches.library,
                               op + ": library calls between its hooks (TODO 1a)");
      gtl::judge::expect_equal(r.next<int64_t>("allocated"), want[k].call.allocated_bytes,
                               op + ": allocated bytes between its hooks (TODO 1a)");
    }
  }
  return "every op's launches, library calls and allocated bytes";
}

std::string profiler_syncs() {
  Recorded r("OpProfiler.AddsNoHostSyncPerOp");
  for (const auto& c : lab09_profiler_cases::net_cases()) {
    lab09::NestedNet plain(c.net, kGpu);
    const gtl::HostSyncCounts before = gtl::host_sync_counts();
    for (int64_t i = 0; i <= c.steps; ++i) plain.step(i);
    const int64_t without = (gtl::host_sync_counts() - before).total();
    gtl::judge::expect_equal(r.next<int64_t>("without"), without,
                             r.test() + ", " + c.what + ": host syncs of the plain steps");
    gtl::judge::expect_equal(r.next<int64_t>("with"), without,
                             r.test() + ", " + c.what +
                                 ": host syncs of the profiled steps, "
                                 "which must be the plain steps' (TODO 1a)");
    if (r.next<int64_t>("at finish") > 1)
      throw Rejection(r.test() + ", " + c.what + ": finish() waited more than once (TODO 1a)");
    gtl::judge::expect_equal(r.next<int64_t>("in ops"), int64_t{0},
                             r.test() + ", " + c.what + ": host syncs inside the ops (TODO 1a)");
  }
  return "the profiled steps wait as often as the plain ones, finish() at most once";
}

std::string profiler_runs() {
  Recorded r("OpProfiler.TwoRunsInARowStartAfresh");
  const auto c = lab09_profiler_cases::net_cases().back();
  gtl::judge::expect_equal(r.next<size_t>("first run's ops"), reference(c.net, c.steps).size(),
                           r.test() + ", " + c.what + ": the first run's ops");
  const std::vector<Call> want = reference(c.net, c.steps + 1);
  gtl::judge::expect_equal(r.next<int64_t>("second run's steps"), c.steps + 1,
                           r.test() + ", " + c.what + ": the second run's steps (TODO 1a, reset)");
  expect_ops(r, want, c.what + ", second run");
  for (size_t k = 0; k < want.size(); ++k) {
    expect_op(r, want[k], k, c.what + ", second run");
    gtl::judge::expect_equal(
        r.next<int64_t>("launches"), want[k].call.launches.total(),
        r.test() + ", " + c.what + ", second run, " + want[k].line + ": launches (TODO 1a, reset)");
  }
  return "a second run after reset() records its own steps only";
}

std::string profiler_table() {
  Recorded r("KeyAverages.SeededRowsByTotalTime");
  const std::vector<lab09::OpRecord> ops = lab09_profiler_cases::seeded_records();
  std::map<std::string, lab09::OpRow> rows;
  std::map<std::string, bool> timed;
  for (const lab09::OpRecord& op : ops) {
    const std::string key = op.kind + " " + op.pass;
    timed.emplace(key, true);
    timed[key] = timed[key] && op.device_us >= 0;
  }
  for (const lab09::OpRecord& op : ops) {
    const std::string key = op.kind + " " + op.pass;
    lab09::OpRow& row = rows[key];
    row.key = key;
    ++row.calls;
    row.total_us += timed[key] ? op.device_us : op.host_us;
    row.flops += op.cost.flops;
    row.bytes += op.cost.bytes;
    row.allocated_bytes += op.allocated_bytes;
    row.launches += op.launches.kernels + op.launches.library;
  }
  std::vector<lab09::OpRow> want;
  for (const auto& [key, row] : rows) want.push_back(row);
  std::stable_sort(want.begin(), want.end(), [](const lab09::OpRow& a, const lab09::OpRow& b) {
    return a.total_us > b.total_us;
  });
  gtl::judge::expect_equal(r.next<size_t>("rows"), want.size(),
                           r.test() + ": rows (one per kind and pass, TODO 1b)");
  for (size_t i = 0; i < want.size(); ++i) {
    const lab09::OpRow& w = want[i];
    const std::string row = r.test() + ": row " + std::to_string(i);
    gtl::judge::expect_equal(r.line("key"), w.key,
                             row + " (by total time, largest first, ties by key; TODO 1b)");
    gtl::judge::expect_equal(r.next<int64_t>("calls"), w.calls, row + " (" + w.key + "): calls");
    gtl::judge::expect_equal(r.next<double>("total"), w.total_us,
                             row + " (" + w.key +
                                 "): total us (device time where every call "
                                 "has one, TODO 1b)");
    gtl::judge::expect_equal(r.next<double>("flops"), w.flops, row + " (" + w.key + "): FLOPs");
    gtl::judge::expect_equal(r.next<double>("bytes"), w.bytes, row + " (" + w.key + "): bytes");
    gtl::judge::expect_equal(r.next<int64_t>("allocated"), w.allocated_bytes,
                             row + " (" + w.key + "): allocated bytes");
    gtl::judge::expect_equal(r.next<int64_t>("launches"), w.launches,
                             row + " (" + w.key + "): launches");
  }
  return std::to_string(want.size()) + " rows of " + std::to_string(ops.size()) + " ops";
}

std::string profiler_trace() {
  Recorded r("ChromeTrace.WellFormedWithEveryOpInsideItsStep");
  const auto c = lab09_profiler_cases::net_cases().back();
  const std::vector<Call> want = reference(c.net, c.steps);
  gtl::judge::expect_equal(r.next<size_t>("steps"), static_cast<size_t>(c.steps),
                           r.test() + ": step events (TODO 1c)");
  gtl::judge::expect_equal(r.next<size_t>("ops"), want.size(), r.test() + ": op events (TODO 1c)");
  for (const Call& w : want) {
    const std::string name = w.call.path + " " + w.call.pass;
    gtl::judge::expect_equal(r.line("an op event"), name, r.test() + ": the next op event");
    gtl::judge::expect_equal(r.next<double>("flops"), w.call.cost.flops,
                             r.test() + ", " + name + ": args.flops (TODO 1c)");
  }
  return "every step and op in the trace, in order, with its FLOPs";
}

}  // namespace

int main(int argc, char** argv) {
  return gtl::judge::run(argc, argv,
                         {{"profiler-ops", profiler_ops},
                          {"profiler-counts", profiler_counts},
                          {"profiler-syncs", profiler_syncs},
                          {"profiler-runs", profiler_runs},
                          {"profiler-table", profiler_table},
                          {"profiler-trace", profiler_trace},
                          {"profiler-gpu", [] {
                             return profiler_ops() + "; " + profiler_counts() + "; " +
                                    profiler_syncs() + "; " + profiler_runs() + "; " +
                                    profiler_trace();
                           }}});
}
