// lab03_capstone: CPU vs GPU vs GPU+AMP on the lab's digit classifier (TODO 7).
//
//   build/cpu/labs/03-mixed-precision/lab03_capstone                  # 300 steps, synthetic digits
//   lab03_capstone --steps 100 --json capstone.json --idx-dir ~/mnist
//
// Prints the table of time per epoch, speedup vs the CPU, peak memory and final accuracy, and
// writes the same rows as JSON for the report. GPU rows read "skipped: ..." without a GPU.
#include <CLI/CLI.hpp>
#include <cstdio>
#include <fstream>
#include <nlohmann/json.hpp>

#include "mixed_precision.h"

int main(int argc, char** argv) {
  CLI::App app{"Lab 03 capstone: CPU FP32 vs GPU FP32 vs GPU FP16 vs GPU BF16"};
  lab03::CapstoneOptions o;
  std::string json_path = "lab03_capstone.json";
  app.add_option("--steps", o.steps, "training steps per row");
  app.add_option("--batch-size", o.batch_size, "batch size");
  app.add_option("--train-size", o.train_size, "synthetic training digits");
  app.add_option("--eval-samples", o.eval_samples, "test digits for the accuracy");
  app.add_option("--hidden", o.model.hidden, "MLP width");
  app.add_option("--blocks", o.model.blocks, "residual blocks");
  app.add_option("--idx-dir", o.idx_dir, "MNIST IDX files instead of synthetic digits");
  app.add_option("--json", json_path, "where to write the rows as JSON");
  CLI11_PARSE(app, argc, argv);
  try {
    const std::vector<lab03::CapstoneRow> rows = lab03::run_capstone(o);
    std::printf("%lld steps of batch %lld, MLP hidden %lld, %lld blocks\n",
                static_cast<long long>(o.steps), static_cast<long long>(o.batch_size),
                static_cast<long long>(o.model.hidden), static_cast<long long>(o.model.blocks));
    std::printf("| %-16s | %14s | %8s | %12s | %8s |\n", "run", "time/epoch (s)", "speedup",
                "peak memory", "accuracy");
    nlohmann::json out = nlohmann::json::array();
    for (const lab03::CapstoneRow& r : rows) {
      if (r.skipped) {
        std::printf("| %-16s | skipped: %s\n", r.name.c_str(), r.skip_reason.c_str());
      } else {
        std::printf("| %-16s | %14.2f | %7.2fx | %9.2f MiB | %7.2f%% |\n", r.name.c_str(),
                    r.seconds_per_epoch, r.speedup_vs_cpu,
                    static_cast<double>(r.peak_bytes) / (1 << 20), 100.0 * r.accuracy);
      }
      out.push_back({{"name", r.name},
                     {"device", r.device},
                     {"precision", r.precision},
                     {"skipped", r.skipped},
                     {"skip_reason", r.skip_reason},
                     {"seconds_per_epoch", r.seconds_per_epoch},
                     {"speedup_vs_cpu", r.speedup_vs_cpu},
                     {"peak_bytes", r.peak_bytes},
                     {"accuracy", r.accuracy},
                     {"final_loss", r.final_loss},
                     {"skipped_steps", r.skipped_steps}});
    }
    std::ofstream(json_path) << out.dump(2) << "\n";
    std::printf("wrote %s\n", json_path.c_str());
  } catch (const std::exception& e) {
    std::fprintf(stderr, "lab03_capstone: %s\n", e.what());
    return 1;
  }
  return 0;
}
