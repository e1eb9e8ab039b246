// Runs the Google Benchmark programs of a lab and reads medians and counters from their JSON.
//
// All benchmarks that the lab's checks compare run in ONE process, with repetitions, so a ratio
// compares two medians measured on the same machine in the same minute. Two lessons are built
// in: Google Benchmark 1.7 rejects "--benchmark_min_time=0.5s" (1.8 accepts it), so the bare
// number is passed; and a crashing program leaves invalid JSON while a filter that matches nothing
// exits 0 with no results: both are failures here, never passes.
#pragma once

#include <filesystem>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "process.h"

namespace gtl::grader {

// One benchmark's result: the median over repetitions (or the single run without them).
struct BenchStat {
  std::string name;
  bool error = false;
  std::string error_message;
  double real_time_ns = 0;
  double cpu_time_ns = 0;
  std::map<std::string, double> counters;  // user counters, e.g. peak_allocated_bytes
};

struct BenchRun {
  std::map<std::string, BenchStat> stats;  // by benchmark name ("BM_Sum/4096")
  std::string error;                       // the run as a whole failed
  std::string output;
  double reported_s = 0;  // the time the program says it measured (reported_measured_seconds)
  double wall_s = 0;      // how long the process ran, by the grader's clock
};

// --benchmark_filter regex that selects exactly `names` ("^(BM_A/8|BM_B/8)$", escaped).
std::string benchmark_filter(const std::vector<std::string>& names);

// A --benchmark_out JSON file; nullopt (and *error) when truncated or not Google Benchmark's.
std::optional<std::map<std::string, BenchStat>> parse_benchmark_json(const std::string& text,
                                                                     std::string* error = nullptr);

// The time a benchmark program says it measured: over every repetition of every benchmark in its
// JSON (the per-repetition runs, not the aggregates), iterations x real time per iteration, in
// seconds. The process ran at least that long, so a figure above its wall-clock duration (which
// the grader measures from outside) was not measured: it was written. 0 for unreadable JSON.
double reported_measured_seconds(const std::string& text);

// "" when `reported_s` fits in the `wall_s` the grader measured, else why the run is rejected.
std::string check_reported_time(double reported_s, double wall_s);

struct BenchSettings {
  int repetitions = 5;
  double min_time_s = 0.1;
};

BenchRun run_benchmarks(const std::filesystem::path& binary, const std::vector<std::string>& names,
                        const BenchSettings& settings, const RunLimits& limits,
                        const std::filesystem::path& scratch, const RunExtras& extras = {});

}  // namespace gtl::grader
