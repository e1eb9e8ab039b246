// Helpers of the lab 08 tests: in-process TP groups in the core's deterministic mode, the
// collectives a phase issued (from the trace), and comparisons whose failures teach.
#pragma once

#include <gtest/gtest.h>

#include <chrono>
#include <cmath>
#include <cstring>
#include <functional>
#include <sstream>
#include <string>
#include <vector>

#include "gtl/distributed/in_process.h"
#include "gtl/distributed/trace.h"
#include "gtl/ops/math_mode.h"
#include "lab08_cases.h"

namespace lab08::testing {

using gtl::dist::Communicator;

inline gtl::dist::RunOptions tp_options() {
  gtl::dist::RunOptions o;
  o.deterministic = true;
  o.timeout = std::chrono::seconds(10);
  return o;
}

// Runs fn(comm) on k in-process ranks, each thread with ops::ScopedRowInvariant on.
inline void run_tp(int k, const std::function<void(Communicator&)>& fn,
                   gtl::dist::RunOptions options = tp_options()) {
  gtl::dist::run_ranks(
      k,
      [&](Communicator& comm) {
        gtl::ops::ScopedRowInvariant row_invariant(true);
        fn(comm);
      },
      options);
}

// The collectives a rank issued from trace event `from` on: "all_reduce 1024" each.
inline std::vector<std::string> collectives_since(const Communicator& comm, std::size_t from) {
  std::vector<std::string> out;
  const auto events = comm.trace()->events();
  for (std::size_t i = from; i < events.size(); ++i)
    if (events[i].kind == gtl::dist::TraceKind::Collective)
      out.push_back(events[i].op + " " + std::to_string(events[i].bytes));
  return out;
}
// The payload bytes a rank sent in the collectives from trace event `from` on (the ring's
// 2 (k - 1) / k of each all-reduce's bytes, in deterministic mode too).
inline int64_t bytes_sent_since(const Communicator& comm, std::size_t from) {
  int64_t sent = 0;
  const auto events = comm.trace()->events();
  for (std::size_t i = from; i < events.size(); ++i)
    if (events[i].kind == gtl::dist::TraceKind::Collective) sent += events[i].bytes_sent;
  return sent;
}
inline std::string joined(const std::vector<std::string>& v) {
  std::string s = "{";
  for (std::size_t i = 0; i < v.size(); ++i) s += (i ? ", " : "") + v[i];
  return s + "}";
}

inline std::string show(double v) {
  std::ostringstream s;
  s.precision(9);
  s << v;
  return s.str();
}

// "" when got and want hold the same bits, else the first difference and what to revisit.
inline std::string bitwise_problem(const std::vector<float>& got, const std::vector<float>& want,
                                   const std::string& what, const std::string& revisit) {
  if (got.size() != want.size())
    return what + ": expected " + std::to_string(want.size()) + " values, got " +
           std::to_string(got.size()) + ". Revisit " + revisit;
  for (std::size_t i = 0; i < got.size(); ++i)
    if (std::memcmp(&got[i], &want[i], sizeof(float)) != 0)
      return what + ": element " + std::to_string(i) + " expected " + show(want[i]) +
             " (bit for bit), got " + show(got[i]) + ". Revisit " + revisit;
  return "";
}
// "" when |got - want| <= bound elementwise (NaN fails), else the first violation.
inline std::string bounded_problem(const std::vector<float>& got, const std::vector<float>& want,
                                   const std::vector<double>& bound, const std::string& what,
                                   const std::string& revisit) {
  if (got.size() != want.size())
    return what + ": expected " + std::to_string(want.size()) + " values, got " +
           std::to_string(got.size()) + ". Revisit " + revisit;
  for (std::size_t i = 0; i < got.size(); ++i)
    if (!(std::fabs(double(got[i]) - double(want[i])) <= bound[i]))
      return what + ": element " + std::to_string(i) + " expected " + show(want[i]) + " within " +
             show(bound[i]) + " (two orders of one sum), got " + show(got[i]) + ". Revisit " +
             revisit;
  return "";
}

}  // namespace lab08::testing
