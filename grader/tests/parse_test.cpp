// Parsing what test and benchmark programs leave behind, including when they die half-way.
#include <gtest/gtest.h>

#include "bench_runner.h"
#include "gtest_runner.h"

namespace gtl::grader {
namespace {

TEST(GtestList, ReadsSuitesTestsAndParameters) {
  const std::string out =
      "Sum.\n  Empty\n  Small\nPrefix/Scan.\n  Size/0  # GetParam() = 3\n  Size/1  # "
      "GetParam() = 5\nTyped/0.  # TypeParam = float\n  Works\n";
  EXPECT_EQ(parse_gtest_list(out),
            (std::vector<std::string>{"Sum.Empty", "Sum.Small", "Prefix/Scan.Size/0",
                                      "Prefix/Scan.Size/1", "Typed/0.Works"}));
  EXPECT_TRUE(parse_gtest_list("").empty());
  EXPECT_TRUE(parse_gtest_list("Running main() from gtest_main.cc\n").empty())
      << "a banner line is not a suite";
}

const char* kGtestJson = R"({
  "tests": 3, "failures": 1,
  "testsuites": [{
    "name": "Sum", "tests": 3,
    "testsuite": [
      {"name": "Ok", "status": "RUN", "result": "COMPLETED", "classname": "Sum"},
      {"name": "Bad", "status": "RUN", "result": "COMPLETED", "classname": "Sum",
       "failures": [{"failure": "sum_test.cpp:9\nExpected equality of these values:\n  sum(x)\n    Which is: 0\n  6", "type": ""}]},
      {"name": "Gpu", "status": "RUN", "result": "SKIPPED", "classname": "Sum"},
      {"name": "DISABLED_Off", "status": "NOTRUN", "result": "SUPPRESSED", "classname": "Sum"}
    ]}]})";

TEST(GtestJson, ReadsOutcomesAndFailureMessages) {
  const auto tests = parse_gtest_json(kGtestJson);
  ASSERT_TRUE(tests.has_value());
  ASSERT_EQ(tests->size(), 3u) << "disabled tests (NOTRUN) are left out";
  EXPECT_EQ((*tests)[0].name, "Sum.Ok");
  EXPECT_EQ((*tests)[0].outcome, TestOutcome::kPassed);
  EXPECT_EQ((*tests)[1].outcome, TestOutcome::kFailed);
  EXPECT_NE((*tests)[1].message.find("Which is: 0"), std::string::npos);
  EXPECT_EQ((*tests)[2].outcome, TestOutcome::kSkipped);
}

TEST(GtestJson, TruncatedOrForeignJsonIsAnError) {
  const std::string full = kGtestJson;
  std::string why;
  EXPECT_FALSE(parse_gtest_json(full.substr(0, full.size() / 2), &why).has_value());
  EXPECT_NE(why.find("truncated"), std::string::npos) << why;
  EXPECT_FALSE(parse_gtest_json("", &why).has_value());
  EXPECT_FALSE(parse_gtest_json(R"({"benchmarks": []})", &why).has_value());
  EXPECT_NE(why.find("not a GoogleTest report"), std::string::npos) << why;
  EXPECT_FALSE(parse_gtest_json(R"({"testsuites": [{"testsuite": 3}]})", &why).has_value());
  EXPECT_FALSE(parse_gtest_json("\x01\xff garbage", &why).has_value());
}

TEST(GtestStream, FollowsTestsAndBlamesTheRunningOne) {
  GtestStream s;
  for (const char* l :
       {"[==========] Running 3 tests from 1 test suite.", "[ RUN      ] Sum.Ok",
        "[       OK ] Sum.Ok (0 ms)", "[ RUN      ] Sum.Gpu", "sum_test.cpp:30: Skipped",
        "no GPU on this machine", "[  SKIPPED ] Sum.Gpu (0 ms)", "[ RUN      ] Sum.Param/3",
        "value was 3", "[  FAILED  ] Sum.Param/3, where GetParam() = 3 (1 ms)",
        "[ RUN      ] Sum.Crash", "about to crash"})
    s.line(l);
  ASSERT_EQ(s.finished().size(), 3u);
  EXPECT_EQ(s.finished()[0].outcome, TestOutcome::kPassed);
  EXPECT_EQ(s.finished()[1].outcome, TestOutcome::kSkipped);
  EXPECT_EQ(s.skip_reason("Sum.Gpu"), "no GPU on this machine")
      << "GoogleTest 1.12's JSON has no skip message: it comes from the stream";
  EXPECT_EQ(s.finished()[2].name, "Sum.Param/3");
  EXPECT_EQ(s.finished()[2].outcome, TestOutcome::kFailed);
  EXPECT_EQ(s.running(), "Sum.Crash") << "a crash now is blamed on this test";
  EXPECT_EQ(s.output_of("Sum.Crash"), "about to crash\n");
  s.line("[  FAILED  ] Sum.Other");  // the end-of-run summary names other tests: ignored
  EXPECT_EQ(s.running(), "Sum.Crash");
}

const char* kBenchJson = R"({
  "context": {"date": "x"},
  "benchmarks": [
    {"name": "BM_Fast/64_mean", "run_name": "BM_Fast/64", "run_type": "aggregate",
     "aggregate_name": "mean", "real_time": 9.0, "cpu_time": 9.0, "time_unit": "us",
     "peak_allocated_bytes": 100},
    {"name": "BM_Fast/64_median", "run_name": "BM_Fast/64", "run_type": "aggregate",
     "aggregate_name": "median", "real_time": 2.0, "cpu_time": 1.5, "time_unit": "us",
     "iterations": 5, "peak_allocated_bytes": 128},
    {"name": "BM_Fast/64_cv", "run_name": "BM_Fast/64", "run_type": "aggregate",
     "aggregate_name": "cv", "real_time": 0.1, "cpu_time": 0.1, "time_unit": "us",
     "peak_allocated_bytes": NaN},
    {"name": "BM_Slow/64_median", "run_name": "BM_Slow/64", "run_type": "aggregate",
     "aggregate_name": "median", "real_time": 8.0, "cpu_time": 8.0, "time_unit": "ms"},
    {"name": "BM_Once/64", "run_name": "BM_Once/64", "run_type": "iteration",
     "real_time": 3.0, "cpu_time": 3.0, "time_unit": "ns", "bytes_per_second": -inf},
    {"name": "BM_Broken/64", "run_name": "BM_Broken/64", "run_type": "iteration",
     "error_occurred": true, "error_message": "wrong result", "real_time": 0, "cpu_time": 0,
     "time_unit": "ns"}
  ]})";

TEST(BenchJson, ReadsMediansInNanosecondsAndCounters) {
  std::string why;
  const auto stats = parse_benchmark_json(kBenchJson, &why);
  ASSERT_TRUE(stats.has_value()) << why << " (bare NaN/inf, as Google Benchmark 1.7 writes them)";
  const BenchStat& fast = stats->at("BM_Fast/64");
  EXPECT_EQ(fast.real_time_ns, 2000.0) << "the median, converted from us";
  EXPECT_EQ(fast.cpu_time_ns, 1500.0);
  EXPECT_EQ(fast.counters.at("peak_allocated_bytes"), 128.0);
  EXPECT_EQ(fast.counters.count("iterations"), 0u) << "built-in fields are not counters";
  EXPECT_EQ(stats->at("BM_Slow/64").real_time_ns, 8e6);
  EXPECT_EQ(stats->at("BM_Once/64").real_time_ns, 3.0) << "no repetitions: the single run";
  EXPECT_TRUE(stats->at("BM_Broken/64").error);
  EXPECT_EQ(stats->at("BM_Broken/64").error_message, "wrong result");
}

TEST(BenchJson, CrashOrEmptyFilterIsNoResult) {
  const std::string full = kBenchJson;
  std::string why;
  EXPECT_FALSE(parse_benchmark_json(full.substr(0, full.size() - 40), &why).has_value())
      << "a benchmark that crashed leaves truncated JSON";
  EXPECT_NE(why.find("truncated"), std::string::npos);
  EXPECT_FALSE(parse_benchmark_json("", &why).has_value());
  EXPECT_FALSE(parse_benchmark_json(R"({"testsuites": []})", &why).has_value());
  const auto empty = parse_benchmark_json(R"({"context": {}, "benchmarks": []})");
  ASSERT_TRUE(empty.has_value());
  EXPECT_TRUE(empty->empty()) << "a filter matching nothing gives no results, never a pass";
  EXPECT_FALSE(parse_benchmark_json(R"({"benchmarks": [{"name": "BM_X"}]})", &why).has_value())
      << "an entry without real_time is garbled";
}

// Every repetition's run, as --benchmark_display_aggregates_only keeps them in the JSON: the time a
// program says it measured is the sum of iterations x time per iteration over them.
const char* kRepetitionsJson = R"({"benchmarks": [
    {"name": "BM_Mine", "run_name": "BM_Mine", "run_type": "iteration", "repetition_index": 0,
     "iterations": 1000, "real_time": 200.0, "cpu_time": 200.0, "time_unit": "us"},
    {"name": "BM_Mine", "run_name": "BM_Mine", "run_type": "iteration", "repetition_index": 1,
     "iterations": 1000, "real_time": 100.0, "cpu_time": 100.0, "time_unit": "us"},
    {"name": "BM_Base", "run_name": "BM_Base", "run_type": "iteration", "repetition_index": 0,
     "iterations": 10, "real_time": 50.0, "cpu_time": 50.0, "time_unit": "ms"},
    {"name": "BM_Base_median", "run_name": "BM_Base", "run_type": "aggregate",
     "aggregate_name": "median", "iterations": 1, "real_time": 50.0, "time_unit": "ms"},
    {"name": "BM_Bad", "run_name": "BM_Bad", "run_type": "iteration", "error_occurred": true,
     "iterations": 1000000, "real_time": 1.0, "time_unit": "s"}
  ]})";

TEST(BenchTime, TheMeasuredTimeIsTheSumOverEveryRepetitionsIterations) {
  // 1000 x 200 us + 1000 x 100 us + 10 x 50 ms; aggregates and errored runs measure nothing.
  EXPECT_DOUBLE_EQ(reported_measured_seconds(kRepetitionsJson), 0.2 + 0.1 + 0.5);
  EXPECT_EQ(reported_measured_seconds("not json"), 0.0);
}

TEST(BenchTime, MoreMeasuredTimeThanTheProcessRanIsRejected) {
  EXPECT_EQ(check_reported_time(0.8, 1.2), "") << "an honest program measured less than it ran";
  EXPECT_EQ(check_reported_time(0.8, 0.79), "") << "within the clocks' granularity";
  const std::string why = check_reported_time(30.0, 0.4);
  EXPECT_NE(why.find("reports 30 s of measured time"), std::string::npos) << why;
  EXPECT_NE(why.find("ran for only 0.4 s"), std::string::npos)
      << "a baseline made to look slow by rewriting the JSON claims more time than the process "
         "ran: "
      << why;
}

TEST(BenchFilter, SelectsExactlyTheNamesEscaped) {
  EXPECT_EQ(benchmark_filter({"BM_A/8", "BM_B/8"}), "^(BM_A/8|BM_B/8)$");
  EXPECT_EQ(benchmark_filter({"BM_A<float>/1.5"}), "^(BM_A<float>/1\\.5)$");
  EXPECT_EQ(benchmark_filter({"BM_(x)*"}), "^(BM_\\(x\\)\\*)$");
}

}  // namespace
}  // namespace gtl::grader
