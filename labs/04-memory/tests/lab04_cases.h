// Inputs of lab 04's tests, shared by the tests and the lab's judge (judge/lab04_judge.cpp): the
// judge draws the same shapes from the grading seed and recomputes what the tests recorded
// (gtl_judge_output.h) with the lab's pristine harness (memory_lab.h) and the core.
//
// Why seeded shapes on top of the fixed ones: a calculator or a timeline right only at the shapes
// the tests are known to use (D = 64, batch 64; D = 32, batch 32) must not pass.
#pragma once

#include <cstdint>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "gtl_test_seed.h"
#include "memory_lab.h"

namespace lab04_cases {

// ---- TODO 1: the calculator ---------------------------------------------------------------------
// One forward, loss, backward and AdamW step of `b`, measured by `allocator`: the bytes held
// between forward and backward above `held` (the activations, logits included), and the step's
// peak allocated bytes.
struct StepBytes {
  int64_t activations = 0;
  int64_t peak = 0;
};
inline StepBytes measure_forward_to_step(gtl::Allocator& allocator, gtl::nn::Module& model,
                                         gtl::optim::AdamW& adamw, const lab04::LabBatch& b,
                                         int64_t held) {
  allocator.reset_peak_stats();
  const gtl::nn::CrossEntropyLoss head;
  gtl::nn::Context ctx, loss_ctx;
  const gtl::Tensor logits = model.forward(b.images, ctx);
  StepBytes bytes;
  bytes.activations = allocator.stats().allocated_bytes - held;
  head.forward(logits, b.labels, loss_ctx);
  model.backward(ctx, head.backward(loss_ctx));
  adamw.step();
  bytes.peak = allocator.stats().peak_allocated_bytes;
  return bytes;
}

// Peak bytes above what was allocated before `step` ran, in `allocator` made current for it.
template <typename F>
int64_t step_peak(const std::shared_ptr<gtl::Allocator>& allocator, F step) {
  const gtl::AllocatorScope scope(allocator);
  allocator->reset_peak_stats();
  const int64_t before = allocator->stats().allocated_bytes;
  step();
  return allocator->stats().peak_allocated_bytes - before;
}

// What the CPU allocator measures for one float32 step of `config` at `batch`, term by term.
struct Measured {
  int64_t persistent = 0;  // model (weights + gradients) and AdamW state
  int64_t batch = 0;
  int64_t activations = 0;  // held between forward and backward, logits included
  int64_t peak = 0;         // peak allocated bytes of the whole step
};
inline Measured measure_step(const lab04::ModelConfig& config, int64_t batch) {
  const std::shared_ptr<gtl::Allocator> allocator = gtl::make_cpu_allocator();
  const gtl::AllocatorScope scope(allocator);
  auto model = gtl::nn::make_model(config);
  gtl::optim::AdamW adamw(model->parameters());
  Measured m;
  m.persistent = allocator->stats().allocated_bytes;
  const lab04::LabBatch b = lab04::make_batch(config, batch);
  m.batch = allocator->stats().allocated_bytes - m.persistent;
  const StepBytes step =
      measure_forward_to_step(*allocator, *model, adamw, b, m.persistent + m.batch);
  m.activations = step.activations;
  m.peak = step.peak;
  return m;
}

// A model shape and a batch drawn from the grading seed.
struct Shape {
  lab04::ModelConfig config;
  int64_t batch = 1;
  std::string shape() const {
    std::string input;
    for (int64_t d : config.input) {
      if (!input.empty()) input += 'x';
      input += std::to_string(d);
    }
    return "D = " + std::to_string(config.hidden) + ", " + std::to_string(config.blocks) +
           (config.blocks == 1 ? " block" : " blocks") + ", batch " + std::to_string(batch) +
           ", input " + input + ", " + std::to_string(config.classes) + " classes";
  }
  std::string describe() const { return shape() + ", " + gtl::test_seed::describe(); }
};
// `count` shapes for `test`: D in [8, 128], min_blocks to 5 blocks, batch 1 to 512, an input of
// 1 x H x W with H, W in [3, 40] and 2 to 40 classes (a calculator that knows 784 and 10 by heart
// fails). Under mixed precision a single block with a wide input and a large batch can peak in
// the forward, which TODO 1b does not model (handout): its shapes have 2 blocks or more.
inline std::vector<Shape> seeded_shapes(const std::string& test, int count, int min_blocks = 1) {
  std::mt19937_64 g = gtl::test_seed::generator(test);
  std::vector<Shape> shapes(static_cast<std::size_t>(count));
  for (Shape& s : shapes) {
    s.config.hidden = gtl::test_seed::draw(g, 8, 128);
    s.config.blocks = gtl::test_seed::draw(g, min_blocks, 5);
    s.batch = gtl::test_seed::draw(g, 1, 512);
    s.config.input = {1, gtl::test_seed::draw(g, 3, 40), gtl::test_seed::draw(g, 3, 40)};
    s.config.classes = gtl::test_seed::draw(g, 2, 40);
  }
  return shapes;
}
constexpr int kSeededShapes = 3;
constexpr int kAmpMinBlocks = 2;  // TODO 1b's seeded shapes (above)

// ---- TODO 4: gradient accumulation
// ---------------------------------------------------------------- A batch of n samples in k
// micro-batches, k not dividing n: n in [20, 160], k in [3, 7].
struct UnevenSplit {
  int64_t n = 0, k = 0;
};
inline UnevenSplit seeded_uneven_split(const std::string& test) {
  std::mt19937_64 g = gtl::test_seed::generator(test);
  UnevenSplit s;
  s.k = gtl::test_seed::draw(g, 3, 7);
  s.n = gtl::test_seed::draw(g, 20, 160);
  if (s.n % s.k == 0) ++s.n;
  return s;
}

// ---- TODO 5b: the segment-length policy ---------------------------------------------------------
// `count` block counts for `test`, 1 to 100,000, drawn from the grading seed.
inline std::vector<int64_t> seeded_block_counts(const std::string& test, int count) {
  std::mt19937_64 g = gtl::test_seed::generator(test);
  std::vector<int64_t> blocks(static_cast<std::size_t>(count));
  for (int64_t& l : blocks) l = gtl::test_seed::draw(g, 1, 100000);
  return blocks;
}
constexpr int kSeededBlockCounts = 8;

// ---- TODO 3: the timeline -----------------------------------------------------------------------
// The runs the timeline tests record: two steps (the second has AdamW's moments, so its backward
// is the run's peak). The fixed one: D = 32, 2 blocks, batch 32.
constexpr int kTimelineSteps = 2;
inline Shape fixed_timeline_shape() {
  Shape s;
  s.config.hidden = 32;
  s.batch = 32;
  return s;
}
// The seeded one: D in [8, 96], 1 to 4 blocks, batch 1 to 96.
inline Shape seeded_timeline_shape() {
  std::mt19937_64 g = gtl::test_seed::generator("MemoryTimeline.SeededRun");
  Shape s;
  s.config.hidden = gtl::test_seed::draw(g, 8, 96);
  s.config.blocks = gtl::test_seed::draw(g, 1, 4);
  s.batch = gtl::test_seed::draw(g, 1, 96);
  return s;
}

// ---- TODO 5a: checkpointing ---------------------------------------------------------------------
// The runs of Checkpointing.GradientsOverwriteThenAccumulate... and ...OfTwoForwardsInFlight...:
// a checkpointed model and the plain one (make_model) go through the same calls and must end with
// the same bits; the judge runs the plain model alone. Batches of 16 samples from seeds 1 and 2.
struct GradientRun {
  std::vector<float> losses;
  std::vector<std::vector<std::vector<float>>> grads;  // [backward][parameter], after each
};
constexpr int64_t kCheckpointBatch = 16;

inline std::vector<std::vector<float>> parameter_gradients(const gtl::nn::Module& model) {
  std::vector<std::vector<float>> out;
  for (const gtl::optim::ParamRef& p : model.parameters()) out.push_back(p.grad.to_vector());
  return out;
}

// What gradients hold before a step when nothing zeroed them: a previous step's, here 1e3.
constexpr float kStaleGradient = 1e3f;

// The gradients filled with kStaleGradient, then forward_backward of `first` with
// GradMode::Overwrite, then of `second` with GradMode::Accumulate.
inline GradientRun overwrite_then_accumulate(gtl::nn::Module& model, const lab04::LabBatch& first,
                                             const lab04::LabBatch& second) {
  for (const gtl::optim::ParamRef& p : model.parameters()) {
    gtl::Tensor grad = p.grad;  // a view of the parameter's gradient
    grad.fill_(kStaleGradient);
  }
  GradientRun run;
  run.losses.push_back(lab04::forward_backward(model, first.images, first.labels, 1.f,
                                               gtl::nn::GradMode::Overwrite));
  run.grads.push_back(parameter_gradients(model));
  run.losses.push_back(lab04::forward_backward(model, second.images, second.labels, 1.f,
                                               gtl::nn::GradMode::Accumulate));
  run.grads.push_back(parameter_gradients(model));
  return run;
}

// Two forwards in flight, their backwards in reverse order: forward(first, ctx1),
// forward(second, ctx2), backward(ctx2) with GradMode::Overwrite, backward(ctx1) with
// GradMode::Accumulate. Each backward must recompute from its own context's input.
inline GradientRun two_forwards_in_flight(gtl::nn::Module& model, const lab04::LabBatch& first,
                                          const lab04::LabBatch& second) {
  const gtl::nn::CrossEntropyLoss head;
  gtl::nn::Context ctx1, loss_ctx1, ctx2, loss_ctx2;
  GradientRun run;
  run.losses.push_back(
      head.forward(model.forward(first.images, ctx1), first.labels, loss_ctx1).item());
  run.losses.push_back(
      head.forward(model.forward(second.images, ctx2), second.labels, loss_ctx2).item());
  model.backward(ctx2, head.backward(loss_ctx2), gtl::nn::GradMode::Overwrite);
  run.grads.push_back(parameter_gradients(model));
  model.backward(ctx1, head.backward(loss_ctx1), gtl::nn::GradMode::Accumulate);
  run.grads.push_back(parameter_gradients(model));
  return run;
}

// ---- TODO 7: the training loop ------------------------------------------------------------------
constexpr int64_t kLoopBatch = 64;
constexpr int kLoopSteps = 4;

// A model, its AdamW and kLoopSteps batches, all in `allocator` (the fixed state of a loop).
struct LoopSetup {
  std::shared_ptr<gtl::Allocator> allocator = gtl::make_cpu_allocator();
  lab04::ModelConfig config;
  std::unique_ptr<gtl::nn::Sequential> model;
  std::unique_ptr<gtl::optim::AdamW> adamw;
  std::vector<lab04::LabBatch> batches;
  LoopSetup() {
    const gtl::AllocatorScope scope(allocator);
    model = gtl::nn::make_model(config);
    adamw = std::make_unique<gtl::optim::AdamW>(model->parameters());
    for (int s = 0; s < kLoopSteps; ++s)
      batches.push_back(lab04::make_batch(config, kLoopBatch, 1 + s));
  }
  // Peak bytes above the fixed state while `f` runs in the allocator.
  template <typename F>
  int64_t peak_of(F f) {
    const gtl::AllocatorScope scope(allocator);
    allocator->reset_peak_stats();
    const int64_t before = allocator->stats().allocated_bytes;
    f();
    return allocator->stats().peak_allocated_bytes - before;
  }
  // One step as forward_backward + adamw.step() takes it, above the fixed state: the loop's bound.
  int64_t one_step_peak() {
    return peak_of([&] {
      lab04::forward_backward(*model, batches[0].images, batches[0].labels);
      adamw->step();
    });
  }
  std::vector<std::vector<float>> weights() const {
    std::vector<std::vector<float>> out;
    for (const gtl::optim::ParamRef& p : model->parameters()) out.push_back(p.value.to_vector());
    return out;
  }
};

}  // namespace lab04_cases
