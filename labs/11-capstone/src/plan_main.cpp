// lab11_plan: the plans of the handout's three runs, with your memory model, step-time model and
// search and report (given: a program over TODOs 1 to 4). For each run it prints the request, the
// best configuration that fits and its memory by category and step time by part, and at most ten
// rows of the Pareto front of the configurations that fit (plan_table), as Markdown; with
// --svg-dir, the chosen plan's memory as a bar (memory_svg); with --trace-dir, the chosen plan's
// step as a Chrome trace (step_timeline: the model's step drawn as 1F1B's schedule), and the
// schedule's step time beside the model's.
//
//   lab11_plan [--mfu 0.4] [--svg-dir DIR] [--trace-dir DIR]
//     DIR/lab11-capstone-<run>.svg: the chosen plan's memory
//     DIR/lab11-capstone-<run>.trace.json: its step, for ui.perfetto.dev or chrome://tracing
//
// The cluster figures are NVIDIA's datasheet figures for an H100 SXM node (80 GB, 989 TFLOP/s
// dense bf16, NVLink 450 GB/s per direction, 400 Gb/s InfiniBand per GPU): stated, not measured.
#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "capstone.h"
#include "gtl/distributed/timeline.h"

namespace {

using namespace lab11;

struct Run {
  const char* name;
  ModelSpec model;
  int nodes;
  int64_t global_batch_tokens;
};

double gib(int64_t b) {
  return static_cast<double>(b) / (1024.0 * 1024.0 * 1024.0);
}

void write_file(const std::string& path, const std::string& text) {
  std::FILE* f = std::fopen(path.c_str(), "w");
  if (f == nullptr || std::fputs(text.c_str(), f) < 0 || std::fclose(f) != 0) {
    std::fprintf(stderr, "lab11_plan: cannot write %s\n", path.c_str());
    std::exit(1);
  }
}

void report(const Run& run, double mfu, const std::string& svg_dir, const std::string& trace_dir) {
  ClusterSpec cl;  // the defaults: H100 SXM datasheet figures, 8 GPUs a node
  cl.nodes = run.nodes;
  SearchRequest req;
  req.global_batch_tokens = run.global_batch_tokens;
  req.achieved_mfu = mfu;
  const Plan plan = search(run.model, cl, req);
  const int gpus = cl.nodes * cl.gpus_per_node;
  std::printf("## %s: %s (%.2f B parameters) on %d GPUs (%d node(s))\n\n", run.name,
              describe(run.model).c_str(),
              static_cast<double>(gpt_parameter_count(run.model)) / 1e9, gpus, cl.nodes);
  std::printf(
      "Global batch %lld tokens, bf16-mixed, achieved MFU %.2f of the peak (assumed); "
      "%zu configurations in the space, %lld fit.\n\n",
      static_cast<long long>(req.global_batch_tokens), mfu, plan.candidates.size(),
      static_cast<long long>(std::count_if(plan.candidates.begin(), plan.candidates.end(),
                                           [](const Candidate& c) { return c.fits; })));
  if (!plan.feasible) {
    std::printf("**No configuration fits.**\n\n");
    return;
  }
  const Config& c = plan.best.config;
  const MemoryBreakdown m = memory_per_gpu(run.model, c);
  const StepTime t = step_time(run.model, cl, c, mfu);
  std::printf("**Chosen:** %s.\n\n", describe(c).c_str());
  std::printf(
      "| memory of stage %d (GiB) | parameters | gradients | optimizer | activations | "
      "other | total |\n|---|---|---|---|---|---|---|\n",
      m.stage);
  std::printf("| | %.2f | %.2f | %.2f | %.2f | %.2f | %.2f of %.2f |\n\n", gib(m.parameters),
              gib(m.gradients), gib(m.optimizer), gib(m.activations), gib(m.other), gib(m.total()),
              gib(cl.gpu_memory_bytes));
  std::printf(
      "| step (s) | compute | TP | sends | bubble | DP | total | tokens/s | MFU |\n"
      "|---|---|---|---|---|---|---|---|---|\n");
  std::printf("| | %.3f | %.3f | %.3f | %.3f | %.3f | %.3f | %.0f | %.3f |\n\n", t.compute_s,
              t.tp_comm_s, t.pp_comm_s, t.bubble_s, t.dp_comm_s, t.step_s, t.tokens_per_s, t.mfu);
  std::printf("%s\n", plan_table(plan, 10).c_str());
  if (!svg_dir.empty()) {
    const std::string path = svg_dir + "/lab11-capstone-" + run.name + ".svg";
    write_file(path, memory_svg(m, cl.gpu_memory_bytes));
    std::printf("Memory of the chosen plan, by category: `%s`.\n\n", path.c_str());
  }
  if (!trace_dir.empty()) {
    const std::string path = trace_dir + "/lab11-capstone-" + run.name + ".trace.json";
    const gtl::dist::Timeline tl = step_timeline(c, t);
    write_file(path, gtl::dist::to_chrome_trace(tl));
    std::printf(
        "One step of the chosen plan as 1F1B's schedule of the model's passes: `%s` (%zu "
        "stage(s)); the schedule's step %.3f s, the model's %.3f s.\n\n",
        path.c_str(), tl.ranks.size(), tl.step_time(), t.step_s);
  }
}

}  // namespace

int main(int argc, char** argv) {
  double mfu = 0.4;
  std::string svg_dir, trace_dir;
  for (int i = 1; i + 1 < argc; ++i) {
    if (std::strcmp(argv[i], "--mfu") == 0) mfu = std::atof(argv[i + 1]);
    if (std::strcmp(argv[i], "--svg-dir") == 0) svg_dir = argv[i + 1];
    if (std::strcmp(argv[i], "--trace-dir") == 0) trace_dir = argv[i + 1];
  }
  const std::vector<Run> runs = {
      {"1b", {24, 2048, 16, 50304, 2048, true}, 1, 256 * 2048},
      {"7b", {32, 4096, 32, 50304, 4096, true}, 4, 1024 * 4096},
      {"70b", {80, 8192, 64, 50304, 4096, true}, 64, 1024 * 4096},
  };
  for (const Run& r : runs) report(r, mfu, svg_dir, trace_dir);
  return 0;
}
