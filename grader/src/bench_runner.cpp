// Google Benchmark runs and JSON medians.
#include "bench_runner.h"
#include "files.h"

#include <nlohmann/json.hpp>

#include <cstring>
#include <fstream>
#include <set>
#include <sstream>

namespace gtl::grader {
namespace {

namespace fs = std::filesystem;

double to_ns(double value, const std::string& unit) {
  if (unit == "us") return value * 1e3;
  if (unit == "ms") return value * 1e6;
  if (unit == "s") return value * 1e9;
  return value;  // "ns"
}

// Fields of a benchmark entry that are not user counters.
const std::set<std::string>& builtin_fields() {
  static const std::set<std::string> fields = {"name",
                                               "family_index",
                                               "per_family_instance_index",
                                               "run_name",
                                               "run_type",
                                               "repetitions",
                                               "repetition_index",
                                               "threads",
                                               "iterations",
                                               "real_time",
                                               "cpu_time",
                                               "time_unit",
                                               "aggregate_name",
                                               "aggregate_unit",
                                               "error_occurred",
                                               "error_message",
                                               "label"};
  return fields;
}

// Google Benchmark 1.7 writes NaN and inf as bare words (e.g. the coefficient of variation of a
// counter that is always 0), which is not JSON. Outside strings they become null.
std::string sanitize_non_finite(const std::string& text) {
  std::string out;
  out.reserve(text.size());
  bool in_string = false;
  for (std::size_t i = 0; i < text.size(); ++i) {
    const char c = text[i];
    if (in_string) {
      out += c;
      if (c == '\\' && i + 1 < text.size()) {
        out += text[++i];
      } else if (c == '"') {
        in_string = false;
      }
      continue;
    }
    if (c == '"') in_string = true;
    bool replaced = false;
    for (const char* word :
         {"-Infinity", "Infinity", "-NaN", "NaN", "-nan", "nan", "-inf", "inf"}) {
      const std::size_t n = std::strlen(word);
      if (text.compare(i, n, word) == 0) {
        out += "null";
        i += n - 1;
        replaced = true;
        break;
      }
    }
    if (!replaced) out += c;
  }
  return out;
}

}  // namespace

std::string benchmark_filter(const std::vector<std::string>& names) {
  std::string alternatives;
  for (const auto& n : names) {
    if (!alternatives.empty()) alternatives += "|";
    for (char c : n) {
      if (std::string_view(".[](){}*+?^$|\\").find(c) != std::string_view::npos)
        alternatives += '\\';
      alternatives += c;
    }
  }
  return "^(" + alternatives + ")$";
}

std::optional<std::map<std::string, BenchStat>> parse_benchmark_json(const std::string& text,
                                                                     std::string* error) {
  auto fail = [&](const std::string& why) -> std::optional<std::map<std::string, BenchStat>> {
    if (error) *error = why;
    return std::nullopt;
  };
  const nlohmann::json j = nlohmann::json::parse(sanitize_non_finite(text), nullptr, false);
  if (j.is_discarded()) return fail("the benchmark JSON is truncated or not JSON");
  if (!j.is_object() || !j.contains("benchmarks") || !j["benchmarks"].is_array())
    return fail("the JSON is not a Google Benchmark report (no 'benchmarks' list)");

  std::map<std::string, BenchStat> medians, singles;
  for (const auto& b : j["benchmarks"]) {
    if (!b.is_object() || !b.contains("name")) return fail("a benchmark entry has no name");
    const std::string run_name = b.value("run_name", b.value("name", std::string()));
    BenchStat s;
    s.name = run_name;
    if (b.value("error_occurred", false)) {
      s.error = true;
      s.error_message = b.value("error_message", "the benchmark reported an error");
      medians[run_name] = s;  // an error wins over any number
      continue;
    }
    const std::string unit = b.value("time_unit", "ns");
    if (!b.contains("real_time") || !b["real_time"].is_number())
      return fail("benchmark '" + run_name + "' has no real_time");
    s.real_time_ns = to_ns(b["real_time"].get<double>(), unit);
    s.cpu_time_ns = to_ns(b.value("cpu_time", 0.0), unit);
    for (const auto& [key, value] : b.items())
      if (value.is_number() && !builtin_fields().count(key)) s.counters[key] = value.get<double>();
    const std::string type = b.value("run_type", "iteration");
    if (type == "aggregate") {
      if (b.value("aggregate_name", "") == "median" &&
          !(medians.count(run_name) && medians[run_name].error))
        medians[run_name] = s;
    } else {
      singles[run_name] = s;  // without repetitions the only run is the figure
    }
  }
  for (auto& [name, s] : singles)
    if (!medians.count(name)) medians[name] = s;
  return medians;
}

double reported_measured_seconds(const std::string& text) {
  const nlohmann::json j = nlohmann::json::parse(sanitize_non_finite(text), nullptr, false);
  if (j.is_discarded() || !j.is_object() || !j.contains("benchmarks") ||
      !j["benchmarks"].is_array())
    return 0;
  double total = 0;
  for (const auto& b : j["benchmarks"]) {
    if (!b.is_object() || b.value("run_type", "iteration") != "iteration") continue;
    if (b.value("error_occurred", false)) continue;
    const auto& t = b.contains("real_time") ? b["real_time"] : nlohmann::json();
    const auto& n = b.contains("iterations") ? b["iterations"] : nlohmann::json();
    if (t.is_number() && n.is_number())
      total += n.get<double>() * to_ns(t.get<double>(), b.value("time_unit", "ns")) * 1e-9;
  }
  return total;
}

std::string check_reported_time(double reported_s, double wall_s) {
  // Slack for the clocks' granularity: the grader's clock starts before exec, so an honest
  // program's measured time always fits in its duration.
  if (reported_s <= wall_s * 1.01 + 0.05) return "";
  std::ostringstream why;
  why.precision(3);
  why << "the benchmark program reports " << reported_s << " s of measured time (iterations x "
      << "time per iteration, every repetition) but ran for only " << wall_s
      << " s, measured by the grader: its figures were not measured";
  return why.str();
}

BenchRun run_benchmarks(const fs::path& binary, const std::vector<std::string>& names,
                        const BenchSettings& settings, const RunLimits& limits,
                        const fs::path& scratch, const RunExtras& extras) {
  BenchRun run;
  if (!fs::exists(binary)) {
    run.error = "benchmark program " + binary.filename().string() + " was not built";
    return run;
  }
  fs::create_directories(scratch);
  const fs::path out = scratch / (binary.filename().string() + ".bench.json");
  fs::remove(out);
  std::ostringstream min_time;
  min_time << settings.min_time_s;  // a bare number: "0.1", never "0.1s"
  const RunResult r = run_process(
      {binary.string(), "--benchmark_filter=" + benchmark_filter(names),
       "--benchmark_repetitions=" + std::to_string(settings.repetitions),
       "--benchmark_display_aggregates_only=true", "--benchmark_min_time=" + min_time.str(),
       "--benchmark_format=console", "--benchmark_color=false", "--benchmark_out_format=json",
       "--benchmark_out=" + out.string()},
      limits, scratch, {}, extras);
  run.output = r.output;
  if (!r.ok()) {
    run.error = "the benchmark program " + r.describe(limits.timeout_s);
    return run;
  }
  std::string why;
  const std::string json = read_file_nofollow(out).value_or("");  // never through a link
  auto parsed = parse_benchmark_json(json, &why);
  if (!parsed) {
    run.error = why;
    return run;
  }
  // The JSON comes from the student's process; its duration comes from the grader's clock.
  run.reported_s = reported_measured_seconds(json);
  run.wall_s = r.wall_s;
  run.error = check_reported_time(run.reported_s, r.wall_s);
  if (!run.error.empty()) return run;
  run.stats = std::move(*parsed);
  return run;
}

}  // namespace gtl::grader
