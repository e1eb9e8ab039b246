// Reading, writing and applying calibration.json (see calibration.h).
#include "calibration.h"

#include <nlohmann/json.hpp>

#include <fstream>
#include <sstream>

#include "process.h"
#include "report.h"

namespace gtl::grader {

namespace fs = std::filesystem;

std::string this_gpu_name(bool cpu_only) {
  if (cpu_only || !program_available("nvidia-smi")) return "cpu";
  RunLimits limits;
  limits.timeout_s = 30;
  const RunResult r =
      run_process({"nvidia-smi", "--query-gpu=name", "--format=csv,noheader"}, limits);
  std::string name = r.ok() ? r.output.substr(0, r.output.find('\n')) : "";
  while (!name.empty() && (name.back() == ' ' || name.back() == '\r')) name.pop_back();
  return name.empty() ? "cpu" : name;
}

Calibration load_calibration(const fs::path& course, const Rubric& lab) {
  std::ifstream in(course / "labs" / lab.dir / "calibration.json");
  if (!in) return {};
  const nlohmann::json j = nlohmann::json::parse(in, nullptr, false);
  Calibration out;
  if (!j.is_object()) return out;
  for (const auto& [gpu, checks] : j.items()) {
    if (!checks.is_object()) continue;
    for (const auto& [name, figure] : checks.items())
      if (figure.is_number() && figure.get<double>() > 0) out[gpu][name] = figure.get<double>();
  }
  return out;
}

void save_calibration(const fs::path& course, const Rubric& lab, const Calibration& calibration) {
  nlohmann::json j = nlohmann::json::object();
  for (const auto& [gpu, checks] : calibration)
    for (const auto& [name, figure] : checks) j[gpu][name] = figure;
  write_atomic(course / "labs" / lab.dir / "calibration.json", j.dump(2) + "\n");
}

Check calibrated(const Check& check, const Calibration& calibration, const std::string& gpu,
                 std::optional<double>* solution) {
  *solution = std::nullopt;
  if (check.kind != CheckKind::kSpeed || !check.min_fraction_of_solution) return check;
  const auto g = calibration.find(gpu);
  if (g == calibration.end()) return check;
  const auto f = g->second.find(check.name);
  if (f == g->second.end()) return check;
  *solution = f->second;
  Check c = check;
  c.min_speedup = *check.min_fraction_of_solution * f->second;
  c.partial_from = std::nullopt;
  if (check.partial_from_fraction) c.partial_from = *check.partial_from_fraction * f->second;
  return c;
}

}  // namespace gtl::grader
