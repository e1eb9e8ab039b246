// Calibration per GPU: the solution's own speedups, measured on the instructor's GPU by
// `gtl-grade calibrate`, so that a speed check can ask for a fraction of what the solution
// reaches on the same kind of GPU instead of one fixed ratio for every GPU.
//
// Stored in the course, beside the rubric: labs/NN-name/calibration.json,
//   {"NVIDIA H100 80GB HBM3": {"sgemm-vs-cublas": 0.83, ...}, "cpu": {...}}
// A check with min_fraction_of_solution (rubric.h) uses it where the file has a figure for the
// GPU the grading runs on; anywhere else it keeps min_speedup and partial_from.
#pragma once

#include <filesystem>
#include <map>
#include <optional>
#include <string>

#include "rubric.h"

namespace gtl::grader {

// GPU name -> check name -> the solution's speedup.
using Calibration = std::map<std::string, std::map<std::string, double>>;

// The name of this machine's first GPU (nvidia-smi), or "cpu" without one or with `cpu_only`.
std::string this_gpu_name(bool cpu_only);

// labs/NN-name/calibration.json of `lab` in `course` ({} when absent or unreadable).
Calibration load_calibration(const std::filesystem::path& course, const Rubric& lab);
void save_calibration(const std::filesystem::path& course, const Rubric& lab,
                      const Calibration& calibration);

// `check` with its thresholds taken from the solution's figure on `gpu`, when the rubric asks for
// it and the calibration has that figure; `check` unchanged otherwise. *solution gets the figure.
Check calibrated(const Check& check, const Calibration& calibration, const std::string& gpu,
                 std::optional<double>* solution);

}  // namespace gtl::grader
