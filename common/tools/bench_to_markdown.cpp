// bench_to_markdown: turns Google Benchmark JSON files into Markdown tables for the reports in
// docs/results/ (scripts/certify-gpu.sh). One table per file: benchmark, time, and every counter.
//
//   bench_to_markdown out/allocator_bench.json out/copy_bench.json > figures.md
//
// A file that is missing or not valid JSON (a benchmark that crashed) becomes a line saying so,
// and the exit code is 1, so a broken benchmark never disappears from a report silently.
#include <cstdio>
#include <fstream>
#include <iostream>
#include <map>
#include <set>
#include <string>

#include <nlohmann/json.hpp>

namespace {

std::string number(double v) {
  char buf[64];
  if (v != 0 && (v >= 1e6 || v < 1e-2)) {
    std::snprintf(buf, sizeof buf, "%.3g", v);
  } else {
    std::snprintf(buf, sizeof buf, "%.2f", v);
  }
  return buf;
}

bool print_table(const std::string& path) {
  std::ifstream in(path);
  nlohmann::json doc;
  try {
    if (!in) throw std::runtime_error("cannot open file");
    in >> doc;
  } catch (const std::exception& e) {
    std::cout << "\n**" << path << "**: no results (" << e.what() << ")\n";
    return false;
  }
  const auto& runs = doc.value("benchmarks", nlohmann::json::array());
  // Counters are the numeric fields a benchmark adds beyond Google Benchmark's own.
  static const std::set<std::string> standard = {"name",
                                                 "run_name",
                                                 "run_type",
                                                 "repetitions",
                                                 "repetition_index",
                                                 "threads",
                                                 "iterations",
                                                 "real_time",
                                                 "cpu_time",
                                                 "time_unit",
                                                 "family_index",
                                                 "per_family_instance_index",
                                                 "aggregate_name",
                                                 "aggregate_unit",
                                                 "error_occurred",
                                                 "error_message",
                                                 "label"};
  std::set<std::string> counters;
  for (const auto& r : runs)
    for (const auto& [k, v] : r.items())
      if (!standard.count(k) && v.is_number()) counters.insert(k);

  std::cout << "\n**" << path.substr(path.find_last_of('/') + 1) << "**\n\n| benchmark | time |";
  for (const auto& c : counters) std::cout << ' ' << c << " |";
  std::cout << "\n|---|---|";
  for (std::size_t i = 0; i < counters.size(); ++i) std::cout << "---|";
  std::cout << '\n';
  bool ok = !runs.empty();
  for (const auto& r : runs) {
    const std::string type = r.value("run_type", "iteration");
    if (type == "aggregate" && r.value("aggregate_name", "") != "median") continue;
    std::cout << "| " << r.value("name", "?") << " | ";
    if (r.value("error_occurred", false)) {
      std::cout << "skipped: " << r.value("error_message", "") << " |";
      for (std::size_t i = 0; i < counters.size(); ++i) std::cout << " |";
      std::cout << '\n';
      continue;
    }
    std::cout << number(r.value("real_time", 0.0)) << ' ' << r.value("time_unit", "") << " |";
    for (const auto& c : counters)
      std::cout << ' ' << (r.contains(c) ? number(r[c].get<double>()) : "") << " |";
    std::cout << '\n';
  }
  if (runs.empty()) std::cout << "| (no benchmark ran) | |\n";
  return ok;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 2) {
    std::cerr << "usage: bench_to_markdown FILE.json...\n";
    return 2;
  }
  bool ok = true;
  for (int i = 1; i < argc; ++i) ok = print_table(argv[i]) && ok;
  return ok ? 0 : 1;
}
