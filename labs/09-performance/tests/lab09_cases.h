// The inputs of lab 09's checks, drawn from the grading seed (gtl_test_seed.h): the tests and the
// judge (judge/lab09_judge.cpp) draw them from here, so both see the same kernels, SMs, models,
// peaks and loops. Only inputs live here; what the answers are is the judge's business.
#pragma once

#include <climits>
#include <cstdint>
#include <functional>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "gtl/nn/models.h"
#include "gtl/ops/activations.h"
#include "gtl/ops/cross_entropy.h"
#include "gtl/runtime/occupancy.h"
#include "gtl_test_seed.h"
#include "performance.h"

namespace lab09_cases {

// ---- TODO 5a --------------------------------------------------------------------------------

// The handout's worked cases (TODO 5a), each with the limit it exercises; the handout's table
// gives their answers. sm_80 holds 164 KiB of shared memory, sm_90 228 KiB, 1 KiB reserved a block.
struct Worked {
  const char* what;
  gtl::KernelResources kernel;
  int by_warps, by_registers, by_shared_80, by_shared_90, blocks_80, blocks_90;
  gtl::OccupancyLimit limit_80, limit_90;
};
using L = gtl::OccupancyLimit;
// clang-format off
inline const Worked kWorked[] = {
  {"warps bind",                  {192, 24, 2048},   10, 14,      54, 76, 10, 10,
   L::Warps, L::Warps},
  {"registers bind (units)",      {256, 36, 0},       8, 6,      164, 228, 6, 6,
   L::Registers, L::Registers},
  {"registers bind (partitions)", {64, 88, 0},       32, 10,     164, 228, 10, 10,
   L::Registers, L::Registers},
  {"a three-way tie",             {48, 32, 0},       32, 32,     164, 228, 32, 32,
   L::Warps, L::Warps},
  {"blocks bind",                 {32, 24, 0},       64, 84,     164, 228, 32, 32,
   L::Blocks, L::Blocks},
  {"shared memory binds",         {128, 32, 46080},  16, 16,       3, 4, 3, 4,
   L::SharedMemory, L::SharedMemory},
  {"shared memory in units",      {64, 0, 16906},    32, INT_MAX,  9, 12, 9, 12,
   L::SharedMemory, L::SharedMemory},
  {"too many registers a thread", {128, 256, 0},     16, 0,      164, 228, 0, 0,
   L::Registers, L::Registers},
  {"too many registers a block",  {768, 84, 0},       2, 0,      164, 228, 0, 0,
   L::Registers, L::Registers},
  {"too much shared on sm_80",    {128, 32, 204800}, 16, 16,       0, 1, 0, 1,
   L::SharedMemory, L::SharedMemory},
  {"too many threads",            {1056, 16, 0},      0, 3,      164, 228, 0, 0,
   L::Warps, L::Warps},
};
// clang-format on

// An SM with made-up limits (every figure drawn), so that code which hard-codes sm_80 or sm_90's
// numbers instead of reading `sm` fails.
inline gtl::SmLimits made_up_sm(std::mt19937_64& g) {
  using gtl::test_seed::draw;
  gtl::SmLimits s;
  s.arch = "made-up";
  s.max_threads_per_sm = 32 * static_cast<int>(draw(g, 16, 64));
  s.max_threads_per_block = 32 * static_cast<int>(draw(g, 8, 32));
  s.max_blocks_per_sm = static_cast<int>(draw(g, 8, 32));
  s.sub_partitions = draw(g, 0, 1) ? 4 : 2;
  s.register_unit = draw(g, 0, 1) ? 256 : 128;
  s.registers_per_sm = 1024 * static_cast<int>(draw(g, 32, 64));
  s.max_registers_per_block = s.registers_per_sm / static_cast<int>(draw(g, 1, 2));
  s.max_registers_per_thread = static_cast<int>(draw(g, 128, 255));
  s.shared_unit = draw(g, 0, 1) ? 128 : 256;
  s.shared_per_sm = 1024 * draw(g, 48, 228);
  // Never 0: a block without shared memory then takes no bytes, and the rule divides by them.
  s.reserved_shared_per_block = draw(g, 0, 1) ? 1024 : 512;
  s.max_shared_per_block = s.shared_per_sm - s.reserved_shared_per_block;
  return s;
}

// `n` kernels drawn for `sm`: block sizes up to a little past its largest block, registers up to
// a little past its largest per thread, shared memory up to a little past its largest block.
inline std::vector<gtl::KernelResources> seeded_kernels(std::mt19937_64& g, const gtl::SmLimits& sm,
                                                        int n) {
  using gtl::test_seed::draw;
  std::vector<gtl::KernelResources> kernels;
  for (int i = 0; i < n; ++i) {
    gtl::KernelResources k;
    k.threads_per_block = static_cast<int>(draw(g, 1, sm.max_threads_per_block + 64));
    k.registers_per_thread =
        draw(g, 0, 9) == 0 ? 0 : static_cast<int>(draw(g, 1, sm.max_registers_per_thread + 8));
    k.shared_bytes_per_block = draw(g, 0, 3) == 0 ? 0 : draw(g, 1, sm.max_shared_per_block + 4096);
    kernels.push_back(k);
  }
  return kernels;
}

// The SMs of Occupancy.SeededKernels: sm_80, sm_90 and one made-up SM, each with its kernels.
struct SeededSm {
  gtl::SmLimits sm;
  std::vector<gtl::KernelResources> kernels;
};
inline std::vector<SeededSm> seeded_occupancy_cases() {
  std::mt19937_64 g = gtl::test_seed::generator("Occupancy.SeededKernels");
  std::vector<SeededSm> cases;
  for (gtl::SmLimits sm : {gtl::SmLimits::sm_80(), gtl::SmLimits::sm_90()})
    cases.push_back({sm, {}});
  cases.push_back({made_up_sm(g), {}});
  for (SeededSm& c : cases) c.kernels = seeded_kernels(g, c.sm, 120);
  return cases;
}

// ---- TODO 5b and 5c -------------------------------------------------------------------------

// A model of the roofline checks: the lab's mlp at a batch, run forward once on the CPU.
struct RooflineCase {
  lab09::TraineeConfig model;  // side, hidden, blocks, classes, batch (and seeds)
  lab09::Peak peak;
};

// The handout's worked case (TODO 5b): a 16-input mlp, 8 wide, one residual block, 5 classes, a
// batch of 4, at the H200 figures this course measured
// (docs/results/2026-11-27-nvidia-h200-third.md: lab 02's BM_Sgemm/3, 49.97 TFLOP/s in float32, and
// BM_DeviceCopy/256, 3.82e12 bytes/s).
inline RooflineCase worked_roofline_case() {
  RooflineCase c;
  c.model = {.side = 4, .hidden = 8, .blocks = 1, .classes = 5, .batch = 4};
  c.peak = {"H200: FP32 SGEMM and device copy, measured", 49.97e12, 3.82e12};
  return c;
}

// Seeded models and peaks (ridge points from about 2 to 1000 FLOP/byte: small layers fall on
// both sides).
inline std::vector<RooflineCase> seeded_roofline_cases() {
  using gtl::test_seed::draw;
  std::mt19937_64 g = gtl::test_seed::generator("Roofline.SeededModels");
  std::vector<RooflineCase> cases;
  for (int i = 0; i < 3; ++i) {
    RooflineCase c;
    c.model.side = draw(g, 2, 5);
    c.model.hidden = draw(g, 4, 48);
    c.model.blocks = draw(g, 1, 3);
    c.model.classes = draw(g, 2, 12);
    c.model.batch = draw(g, 1, 64);
    c.model.model_seed = static_cast<uint64_t>(draw(g, 0, 1000));
    c.peak.name = "seeded";
    c.peak.bytes_per_s = 1e9 * static_cast<double>(draw(g, 100, 8000));
    c.peak.flops_per_s = c.peak.bytes_per_s * static_cast<double>(draw(g, 2, 1000)) / 4.0;
    cases.push_back(c);
  }
  return cases;
}

// The mlp of a case, run forward once on the CPU (every module's last_input_shape set).
inline std::unique_ptr<gtl::nn::Sequential> forward_once(const lab09::TraineeConfig& m) {
  gtl::nn::ModelConfig c;
  c.kind = "mlp";
  c.input = {1, m.side, m.side};
  c.classes = m.classes;
  c.hidden = m.hidden;
  c.blocks = m.blocks;
  c.seed = m.model_seed;
  auto model = gtl::nn::make_model(c);
  gtl::Generator gen(1);
  gtl::nn::Context ctx;
  (void)model->forward(gtl::Tensor::normal({m.batch, 1, m.side, m.side}, gen), ctx);
  return model;
}

// The module paths of the lab's mlp with `blocks` residual blocks that have work of their own,
// with their kinds (make_model: flatten, linear, blocks x residual_mlp(ln, fc1, gelu, fc2),
// layernorm, linear). The flatten is a view: it costs nothing.
inline std::vector<std::pair<std::string, std::string>> costed_modules(int64_t blocks) {
  std::vector<std::pair<std::string, std::string>> m = {{"1", "linear"}};
  for (int64_t b = 0; b < blocks; ++b) {
    const std::string p = std::to_string(2 + b);
    m.insert(m.end(), {{p, "residual_mlp"},
                       {p + ".ln", "layernorm"},
                       {p + ".fc1", "linear"},
                       {p + ".gelu", "gelu"},
                       {p + ".fc2", "linear"}});
  }
  m.push_back({std::to_string(2 + blocks), "layernorm"});
  m.push_back({std::to_string(3 + blocks), "linear"});
  return m;
}

// TODO 5c's ops: made-up rows (some compute-bound, some memory-bound, bound_s filled as 5b would)
// and a measured step time above their bound.
struct FiguresCase {
  std::vector<lab09::OpRoofline> ops;
  double measured_s = 0;
  lab09::Peak peak;
};
inline std::vector<FiguresCase> seeded_figures_cases() {
  using gtl::test_seed::draw;
  std::mt19937_64 g = gtl::test_seed::generator("StepFigures.Seeded");
  std::vector<FiguresCase> cases;
  for (int i = 0; i < 3; ++i) {
    FiguresCase c;
    c.peak = {"seeded", 1e12 * static_cast<double>(draw(g, 10, 1000)),
              1e9 * static_cast<double>(draw(g, 500, 5000))};
    const int n = static_cast<int>(draw(g, 4, 12));
    for (int k = 0; k < n; ++k) {
      lab09::OpRoofline op;
      op.path = std::to_string(k);
      op.kind = "op";
      op.pass = k % 2 ? "backward" : "forward";
      op.flops = static_cast<double>(draw(g, 1 << 20, 1 << 30));
      // Alternately far below and far above the ridge: both ceilings bind somewhere.
      const double ridge = c.peak.flops_per_s / c.peak.bytes_per_s;
      op.bytes = k % 2 ? op.flops / ridge * static_cast<double>(draw(g, 4, 64))
                       : op.flops / ridge / static_cast<double>(draw(g, 4, 64));
      op.intensity = op.flops / op.bytes;
      op.compute_bound = op.intensity >= ridge;
      op.bound_s = op.compute_bound ? op.flops / c.peak.flops_per_s : op.bytes / c.peak.bytes_per_s;
      c.ops.push_back(op);
    }
    // Cases 1 and 2 checkpoint: some forwards (the first always) run again in the backward pass.
    for (int k = 0; i > 0 && k < n; k += 2)
      if (k == 0 || draw(g, 0, 1)) {
        lab09::OpRoofline again = c.ops[static_cast<std::size_t>(k)];
        again.recomputed = true;
        c.ops.push_back(again);
      }
    // A measured time no step of these ops could beat: every op's compute and memory times added
    // up (no overlap at all), and more.
    double slowest = 0;
    for (const lab09::OpRoofline& op : c.ops)
      slowest += op.flops / c.peak.flops_per_s + op.bytes / c.peak.bytes_per_s;
    c.measured_s = slowest * (1.0 + static_cast<double>(draw(g, 1, 400)) / 100.0);
    cases.push_back(c);
  }
  return cases;
}

// ---- TODO 2 ---------------------------------------------------------------------------------

// A loop of the host-sync checks: the trainee it runs and N, K.
struct LoopCase {
  std::string what;
  lab09::TraineeConfig trainee;
  lab09::LoopConfig loop;
};

// Fixed: K divides N, K does not, K above N, K = 1. Seeded: N and K with N % K != 0, and the
// trainee's model and data seeds.
inline std::vector<LoopCase> loop_cases() {
  using gtl::test_seed::draw;
  std::vector<LoopCase> cases = {{"N = 8, K = 4", {}, {8, 4}},
                                 {"N = 10, K = 4", {}, {10, 4}},
                                 {"N = 3, K = 5", {}, {3, 5}},
                                 {"N = 3, K = 1", {}, {3, 1}}};
  std::mt19937_64 g = gtl::test_seed::generator("FastLoop.Seeded");
  LoopCase c;
  c.loop.log_every = draw(g, 2, 5);
  do c.loop.steps = draw(g, 5, 13);
  while (c.loop.steps % c.loop.log_every == 0);
  c.trainee.model_seed = static_cast<uint64_t>(draw(g, 0, 1000));
  c.trainee.data_seed = static_cast<uint64_t>(draw(g, 1, 1000));
  c.trainee.batches = draw(g, 3, 8);
  c.what = "seeded: N = " + std::to_string(c.loop.steps) +
           ", K = " + std::to_string(c.loop.log_every) + ", model seed " +
           std::to_string(c.trainee.model_seed) + ", data seed " +
           std::to_string(c.trainee.data_seed) + ", " + gtl::test_seed::describe();
  cases.push_back(c);
  return cases;
}

// ---- TODO 4 ---------------------------------------------------------------------------------

// The graph checks' trainee (as many batches as steps: each step sees new data) and steps.
struct GraphCase {
  lab09::TraineeConfig trainee;
  int64_t steps = 4;
};
inline GraphCase graph_case() {
  using gtl::test_seed::draw;
  std::mt19937_64 g = gtl::test_seed::generator("GraphedStep.Seeded");
  GraphCase c;
  c.steps = draw(g, 3, 6);
  c.trainee.batches = c.steps;
  c.trainee.model_seed = static_cast<uint64_t>(draw(g, 0, 1000));
  c.trainee.data_seed = static_cast<uint64_t>(draw(g, 1, 1000));
  return c;
}

// ---- TODO 6 ---------------------------------------------------------------------------------

// A head of the TODO 6 checks and how many calls each check makes (the batches cycle).
struct FasterCase {
  std::string what;
  lab09::HeadConfig head;
  int64_t steps = 4;
};

// Fixed: the default head over 4 calls. Seeded: every size of the head, its seed, 3 to 5 calls.
inline std::vector<FasterCase> faster_cases() {
  using gtl::test_seed::draw;
  std::vector<FasterCase> cases = {{"the default head, 4 calls", {}, 4}};
  std::mt19937_64 g = gtl::test_seed::generator("FasterStep.Seeded");
  FasterCase c;
  c.head.in = draw(g, 2, 40);
  c.head.hidden = draw(g, 2, 48);
  c.head.classes = draw(g, 2, 12);
  c.head.batch = draw(g, 2, 24);
  c.head.batches = draw(g, 2, 4);
  c.head.seed = static_cast<uint64_t>(draw(g, 0, 1000));
  c.steps = draw(g, 3, 5);
  c.what = "seeded: in " + std::to_string(c.head.in) + ", hidden " + std::to_string(c.head.hidden) +
           ", classes " + std::to_string(c.head.classes) + ", batch " +
           std::to_string(c.head.batch) + ", head seed " + std::to_string(c.head.seed) + ", " +
           std::to_string(c.steps) + " calls, " + gtl::test_seed::describe();
  cases.push_back(c);
  return cases;
}

// The work no change of TODO 6 removes, run once warm so that it is counted alone: the GELU and
// the cross-entropy of a case's shapes, each the core's one op, on memory that already exists. A
// step's budget is this work plus one kernel per bias and one library call per GEMM (the test
// and the judge count it each with their own counters).
inline std::function<void()> faster_floor(const lab09::Head& head, const FasterCase& c) {
  const gtl::Tensor h =
      gtl::Tensor::zeros({c.head.batch, c.head.hidden}, gtl::DType::Float32, head.device());
  const gtl::Tensor y =
      gtl::Tensor::zeros({c.head.batch, c.head.classes}, gtl::DType::Float32, head.device());
  std::function<void()> work = [&head, h, y] {
    (void)gtl::ops::gelu(h);
    (void)gtl::ops::cross_entropy(y, head.labels(0));
  };
  work();
  return work;
}

// The "after" step 6b's checks give speed_report (never your FastEval, so 6b's checks do not
// depend on 6a): a GELU of batch i each call, and a first call that sets up more than the others,
// as a step with a warm-up does. Each call of test_step makes a step with its own first call.
inline lab09::CountedStep test_step(const lab09::Head& head) {
  auto calls = std::make_shared<int64_t>(0);
  return [&head, calls](int64_t i) {
    if ((*calls)++ == 0) (void)gtl::Tensor::zeros({64}, gtl::DType::Float32, head.device());
    (void)gtl::ops::gelu(head.x(i));
  };
}

}  // namespace lab09_cases
