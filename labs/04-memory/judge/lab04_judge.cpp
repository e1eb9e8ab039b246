// The judge of lab 04 (docs/grader.md, "The judge"): built from the course alone (the lab's
// header, the tests' shared cases and the core), never from the student's files. gtl-grade runs
// `lab04_judge <check>` after the check's tests; each case reads what those tests recorded
// (gtl_judge_output.h) and recomputes it: the core's allocator measures the bytes of a step (the
// calculator, at the fixed shapes and at those the grading seed draws), the core's forward and
// backward give the whole-batch and plain-model gradients (accumulation, checkpointing), a
// training step under a memory limit finds the largest batch, and the core's allocator counts a
// training step's allocations (steady state). The timeline cases replay the tests' runs (the
// fixed one and a seeded one) through the lab's pristine harness with the judge's own recorder
// and derive the peak, its event and every category's bytes from the events; the fixed loop's
// case reruns the pristine hungry loop and measures one step's and one forward's bytes. The
// caching allocator's rules on the tests' fixed scenarios, the segment lengths and the forward
// counts are checked against the rules the handout states, from the lab header's constants: the
// tests' inputs are fixed, so these cases stop forged verdicts, not outputs copied from a
// finished run (docs/grader.md). The seeded allocator traces are replayed on the judge's own model
// of the rules (lab04_allocator_model.h, beside this file) and compared call by call.
#include <algorithm>
#include <array>
#include <cmath>
#include <limits>
#include <string>
#include <utility>
#include <vector>

#include "gtl/nn/parameter_buffer.h"
#include "gtl/optim/adamw.h"
#include "gtl_judge.h"
#include "lab04_allocator_model.h"
#include "lab04_cases.h"
#include "memory_lab.h"

namespace {

using gtl::Tensor;
using gtl::judge::Recorded;
using gtl::judge::Rejection;
using lab04::LabCachingAllocator;

using lab04_cases::measure_step;
using lab04_cases::Measured;
using lab04_cases::Shape;

lab04::ModelConfig with_blocks(int64_t blocks) {
  lab04::ModelConfig config;
  config.blocks = blocks;
  return config;
}

std::string calculator_persistent() {
  Recorded counts("MemoryCalculator.CountsEveryParameterOfTheLabModel");
  for (int64_t blocks : {1, 2, 4})
    gtl::judge::expect_equal(counts.next<int64_t>("a count"),
                             gtl::nn::make_model(with_blocks(blocks))->num_parameters(),
                             "count_parameters for " + std::to_string(blocks) + " blocks");
  Recorded r("MemoryCalculator.PersistentBytesAreExact");
  const lab04::ModelConfig config;
  const Measured m = measure_step(config, 64);
  const int64_t p = 4 * gtl::nn::make_model(config)->num_parameters();
  const auto e = r.sequence<int64_t>("the estimate", 4);
  gtl::judge::expect_equal(e[0], p, "the weights' bytes");
  gtl::judge::expect_equal(e[1], p, "the gradients' bytes");
  gtl::judge::expect_equal(e[2], 2 * p, "AdamW's bytes");
  gtl::judge::expect_equal(e[0] + e[1] + e[2], m.persistent, "the persistent bytes measured");
  gtl::judge::expect_equal(e[3], m.batch, "the batch's bytes measured");
  // The same at the shapes the grading seed draws.
  const std::string seeded_counts = "MemoryCalculator.CountsParametersOfSeededModels";
  Recorded sc(seeded_counts);
  for (const Shape& s : lab04_cases::seeded_shapes(seeded_counts, lab04_cases::kSeededShapes))
    gtl::judge::expect_equal(sc.next<int64_t>("a count"),
                             gtl::nn::make_model(s.config)->num_parameters(),
                             seeded_counts + ": count_parameters at " + s.shape());
  const std::string seeded_bytes = "MemoryCalculator.PersistentBytesAreExactAtSeededShapes";
  Recorded sb(seeded_bytes);
  for (const Shape& s : lab04_cases::seeded_shapes(seeded_bytes, lab04_cases::kSeededShapes)) {
    const Measured ms = measure_step(s.config, s.batch);
    const int64_t ps = 4 * gtl::nn::make_model(s.config)->num_parameters();
    const auto es = sb.sequence<int64_t>("the estimate", 4);
    const std::string at = seeded_bytes + ": at " + s.shape() + ", ";
    gtl::judge::expect_equal(es[0], ps, at + "the weights' bytes");
    gtl::judge::expect_equal(es[1], ps, at + "the gradients' bytes");
    gtl::judge::expect_equal(es[2], 2 * ps, at + "AdamW's bytes");
    gtl::judge::expect_equal(es[0] + es[1] + es[2], ms.persistent,
                             at + "the persistent bytes measured");
    gtl::judge::expect_equal(es[3], ms.batch, at + "the batch's bytes measured");
  }
  return "counts and persistent bytes exact, at the fixed and the seeded shapes";
}

std::string calculator_activations() {
  Recorded r("MemoryCalculator.ActivationBytesAreExactAcrossBatchAndDepth");
  for (int64_t blocks : {1, 2, 4})
    for (int64_t batch : {1, 16, 64, 256})
      gtl::judge::expect_equal(r.next<int64_t>("an estimate"),
                               measure_step(with_blocks(blocks), batch).activations,
                               "the activations of " + std::to_string(blocks) + " blocks, batch " +
                                   std::to_string(batch));
  const std::string seeded = "MemoryCalculator.ActivationBytesAreExactAtSeededShapes";
  Recorded sr(seeded);
  for (const Shape& s : lab04_cases::seeded_shapes(seeded, lab04_cases::kSeededShapes))
    gtl::judge::expect_equal(sr.next<int64_t>("an estimate"),
                             measure_step(s.config, s.batch).activations,
                             seeded + ": the activations at " + s.shape());
  return "every activation estimate equals the measured bytes, fixed and seeded shapes";
}

// Rejects unless the predicted peak is the one the judge measures, to the byte (the test's bar).
void expect_peak(Recorded& r, const Shape& s) {
  gtl::judge::expect_equal(r.next<int64_t>("a peak"), measure_step(s.config, s.batch).peak,
                           r.test() + ": the peak predicted for " + s.shape());
}

std::string calculator_peak() {
  Recorded r("MemoryCalculator.PeakIsTheMeasuredPeak");
  for (int64_t hidden : {32, 64})
    for (int64_t blocks : {1, 2, 4})
      for (int64_t batch : {1, 16, 64, 256, 1024}) {
        Shape s{with_blocks(blocks), batch};
        s.config.hidden = hidden;
        expect_peak(r, s);
      }
  const std::string seeded = "MemoryCalculator.PeakAtSeededShapesIsTheMeasuredPeak";
  Recorded sr(seeded);
  for (const Shape& s : lab04_cases::seeded_shapes(seeded, lab04_cases::kSeededShapes))
    expect_peak(sr, s);
  return "every peak equals the measured one, fixed and seeded shapes";
}

// What the CPU allocator measures for one mixed-precision step (memory_calculator_amp_test.cpp):
// the flat buffer's float32 values and gradients, its half compute copy, AdamW over it.
struct MeasuredAmp {
  int64_t masters = 0, master_grads = 0, compute_copy = 0, optimizer = 0, batch = 0,
          activations = 0, peak = 0;
};
MeasuredAmp measure_amp_step(const lab04::ModelConfig& config, int64_t batch,
                             const gtl::nn::PrecisionPolicy& policy) {
  const std::shared_ptr<gtl::Allocator> allocator = gtl::make_cpu_allocator();
  const gtl::AllocatorScope scope(allocator);
  auto model = gtl::nn::make_model(config);
  gtl::nn::ParameterBuffer buffer(*model, gtl::Device::cpu());
  buffer.enable_compute_copy(policy.compute);
  MeasuredAmp m;
  const int64_t model_bytes = allocator->stats().allocated_bytes;
  gtl::optim::AdamW adamw({buffer.flat_param()});
  m.masters = int64_t(buffer.values().nbytes());
  m.master_grads = int64_t(buffer.grads().nbytes());
  m.compute_copy = int64_t(buffer.compute().nbytes());
  const int64_t persistent = allocator->stats().allocated_bytes;
  m.optimizer = persistent - model_bytes;
  const lab04::LabBatch b = lab04::make_batch(config, batch);
  m.batch = allocator->stats().allocated_bytes - persistent;
  const gtl::nn::PrecisionScope precision(policy);
  allocator->reset_peak_stats();
  const gtl::nn::CrossEntropyLoss head;
  gtl::nn::Context ctx, loss_ctx;
  const Tensor logits = model->forward(b.images, ctx);
  m.activations = allocator->stats().allocated_bytes - persistent - m.batch;
  head.forward(logits, b.labels, loss_ctx);
  model->backward(ctx, head.backward(loss_ctx));
  adamw.step();
  m.peak = allocator->stats().peak_allocated_bytes;
  return m;
}

std::string calculator_amp() {
  const std::vector<gtl::nn::PrecisionPolicy> policies = {gtl::nn::PrecisionPolicy::bf16(),
                                                          gtl::nn::PrecisionPolicy::fp16()};
  Recorded persistent("MemoryCalculatorAmp.PersistentBytesAreExactPerTerm");
  for (const auto& policy : policies)
    for (int64_t blocks : {1, 2, 4}) {
      const MeasuredAmp m = measure_amp_step(with_blocks(blocks), 64, policy);
      const std::vector<int64_t> want = {m.masters, m.master_grads, m.compute_copy, m.optimizer,
                                         m.batch};
      if (persistent.sequence<int64_t>("the persistent terms", want.size()) != want)
        throw Rejection("the persistent terms under " + policy.name() + " with " +
                        std::to_string(blocks) + " blocks differ from the measured bytes");
    }
  Recorded activations("MemoryCalculatorAmp.ActivationBytesAreExactInHalfAndFloat32");
  for (const auto& policy : policies)
    for (int64_t blocks : {1, 2, 4})
      for (int64_t batch : {1, 16, 64, 256})
        gtl::judge::expect_equal(activations.next<int64_t>("an estimate"),
                                 measure_amp_step(with_blocks(blocks), batch, policy).activations,
                                 "the activations under " + policy.name() + " of " +
                                     std::to_string(blocks) + " blocks, batch " +
                                     std::to_string(batch));
  Recorded peak("MemoryCalculatorAmp.PeakIsTheMeasuredPeak");
  for (const auto& policy : policies)
    for (int64_t hidden : {32, 64})
      for (int64_t blocks : {1, 2, 4})
        for (int64_t batch : {1, 16, 64, 256, 1024}) {
          lab04::ModelConfig config = with_blocks(blocks);
          config.hidden = hidden;
          gtl::judge::expect_equal(
              peak.next<int64_t>("a peak"), measure_amp_step(config, batch, policy).peak,
              "the peak predicted under " + policy.name() + " for D = " + std::to_string(hidden) +
                  ", " + std::to_string(blocks) + " blocks, batch " + std::to_string(batch));
        }
  const std::string seeded = "MemoryCalculatorAmp.PeakAtSeededShapesIsTheMeasuredPeak";
  Recorded seeded_peak(seeded);
  for (const auto& policy : policies)
    for (const Shape& s :
         lab04_cases::seeded_shapes(seeded, lab04_cases::kSeededShapes, lab04_cases::kAmpMinBlocks))
      gtl::judge::expect_equal(seeded_peak.next<int64_t>("a peak"),
                               measure_amp_step(s.config, s.batch, policy).peak,
                               "the peak predicted under " + policy.name() + " for " + s.shape());
  return "every mixed-precision term and every peak equals the measured one";
}

int64_t rounded(int64_t bytes) {
  const int64_t r = int64_t(LabCachingAllocator::kRound);
  return (bytes + r - 1) / r * r;
}
void expect_values(Recorded& r, const std::vector<int64_t>& want, const std::string& what) {
  if (r.sequence<int64_t>(what, want.size()) != want)
    throw Rejection(r.test() + ": " + what + " break the allocator's rules");
}

// The test's record of a seeded trace, call by call, against the rules' model.
void expect_trace(const std::string& test, int calls, int64_t limit) {
  Recorded r(test);
  const auto trace = lab04_model::seeded_trace(test, calls, limit);
  for (std::size_t i = 0; i < trace.size(); ++i) {
    const std::vector<int64_t> want = lab04_trace::record_of(trace[i].place, trace[i].state);
    if (r.sequence<int64_t>("call " + std::to_string(i + 1) + "'s block and state", want.size()) !=
        want)
      throw Rejection(test + ": call " + std::to_string(i + 1) + " (" + trace[i].call.describe() +
                      ") breaks the allocator's rules");
  }
}

std::string allocator_rules() {
  const int64_t segment = int64_t(LabCachingAllocator::kSegment);
  Recorded rounds("CachingAllocator.RoundsEveryRequestTo512Bytes");
  expect_values(rounds, {rounded(1), rounded(513), rounded(1), 1, segment, 1},
                "rounding, block size and statistics of a 1-byte request");
  Recorded splits("CachingAllocator.SplitsASegmentAndReusesIt");
  expect_values(splits, {rounded(1000), 0, 1}, "split offsets and reuse");
  Recorded best("CachingAllocator.ChoosesTheBestFitNotTheFirstFit");
  gtl::judge::expect_equal(best.next<int64_t>("the best fit's offset"),
                           rounded(4096) + rounded(512), "the block best fit picks");
  Recorded coalesce("CachingAllocator.CoalescesFreeNeighbours");
  expect_values(coalesce, {1, segment, 0}, "the coalesced segment");
  Recorded stats("CachingAllocator.StatisticsFollowFreesAndEmptyCache");
  expect_values(stats, {2, segment, rounded(3 << 20), 1}, "the cache after a free and empty_cache");
  expect_values(stats, {0, 0}, "the statistics once everything is free");
  Recorded frag("CachingAllocator.FragmentationIsMeasured");
  const auto f = frag.sequence<double>("the fragmentation", 3);
  if (!(f[0] == 2 && f[1] == double(1 << 20) && f[2] == 1.0 - double(1 << 19) / double(1 << 20)))
    throw Rejection("the fragmentation of two 512 KiB holes is not 1 - 512 KiB / 1 MiB");
  expect_trace("CachingAllocator.FollowsTheRulesOnASeededTrace", lab04_trace::kTraceCalls, 0);
  return "every rule holds on the tests' scenarios and on the seeded trace";
}

std::string allocator_oom() {
  const int64_t segment = int64_t(LabCachingAllocator::kSegment);
  Recorded r("CachingAllocator.OutOfMemoryReleasesTheCacheAndChangesNothing");
  expect_values(r, {1, 1000, segment, 3 * segment}, "the statistics around the OOM");
  expect_trace("CachingAllocator.OutOfMemoryOnASeededTraceUnderALimit", lab04_trace::kTraceCalls,
               lab04_trace::kTraceLimit);
  return "the OOM is counted, changes nothing and frees the cache, also on the seeded trace";
}

std::string allocator_steady_state() {
  // The allocations three training steps make, counted by the core's allocator: the same
  // requests whatever allocator serves them.
  const auto core = gtl::make_cpu_allocator();
  const gtl::AllocatorScope scope(core);
  const lab04::ModelConfig config;
  auto model = gtl::nn::make_model(config);
  gtl::optim::AdamW adamw(model->parameters());
  const lab04::LabBatch b = lab04::make_batch(config, 64);
  lab04::forward_backward(*model, b.images, b.labels);
  adamw.step();
  const gtl::MemoryStats warm = core->stats();
  for (int step = 0; step < 3; ++step) {
    lab04::forward_backward(*model, b.images, b.labels);
    adamw.step();
  }
  const gtl::MemoryStats s = core->stats();
  Recorded r("CachingAllocator.SteadyStateTrainingMakesNoSystemAllocation");
  expect_values(r, {0, s.num_allocs - warm.num_allocs, s.allocated_bytes},
                "the system allocations, allocations and bytes of three warm steps");
  return "three warm steps: no system allocation, every request the core counts";
}

std::vector<std::vector<float>> gradients(const gtl::nn::Module& model) {
  std::vector<std::vector<float>> out;
  for (const gtl::optim::ParamRef& p : model.parameters()) out.push_back(p.grad.to_vector());
  return out;
}

std::string accumulation_gradients() {
  const lab04::ModelConfig config;
  const lab04::LabBatch b = lab04::make_batch(config, 64);
  auto whole = gtl::nn::make_model(config);
  const float whole_loss = lab04::forward_backward(*whole, b.images, b.labels);
  Recorded r("GradAccumulation.GradientsEqualTheWholeBatchWithinTheDerivedTolerance");
  const float loss = r.next<float>("the loss");
  if (!(std::fabs(loss - whole_loss) <= 1e-5f * std::fabs(whole_loss)))
    throw Rejection("the accumulated loss " + gtl::judge::show(loss) +
                    " is not the whole batch's " + gtl::judge::show(whole_loss));
  constexpr float kEps = std::numeric_limits<float>::epsilon();
  for (const auto& want : gradients(*whole)) {
    float scale = 0.f;
    for (float g : want) scale = std::max(scale, std::fabs(g));
    const float tolerance = 64 * kEps * scale * 4 + 1e-12f;  // the test's derived bound
    gtl::judge::expect_close({want.begin(), want.end()},
                             r.sequence<float>("a gradient", want.size()), 0, tolerance,
                             "an accumulated gradient");
  }
  // k not dividing n (the fixed case and the seeded one): the test's bound 4 (n + 3) eps max|g|.
  const std::string seeded = "GradAccumulation.GradientsOfUnevenMicroBatchesAtASeededShape";
  const std::pair<std::string, int64_t> uneven[] = {
      {"GradAccumulation.GradientsOfUnevenMicroBatchesEqualTheWholeBatch", 66},
      {seeded, lab04_cases::seeded_uneven_split(seeded).n}};
  for (const auto& [test, n] : uneven) {
    const lab04::LabBatch nb = lab04::make_batch(config, n);
    auto nwhole = gtl::nn::make_model(config);
    const float nloss = lab04::forward_backward(*nwhole, nb.images, nb.labels);
    Recorded u(test);
    const float got = u.next<float>("the loss");
    if (!(std::fabs(got - nloss) <= 1e-5f * std::fabs(nloss)))
      throw Rejection("the accumulated loss " + gtl::judge::show(got) + " of " + std::to_string(n) +
                      " samples is not the whole batch's " + gtl::judge::show(nloss));
    for (const auto& want : gradients(*nwhole)) {
      float scale = 0.f;
      for (float g : want) scale = std::max(scale, std::fabs(g));
      const float tolerance = 4 * static_cast<float>(n + 3) * kEps * scale + 1e-12f;
      gtl::judge::expect_close({want.begin(), want.end()},
                               u.sequence<float>("a gradient", want.size()), 0, tolerance,
                               "an accumulated gradient of uneven micro-batches");
    }
  }
  const lab04::LabBatch small = lab04::make_batch(config, 32);
  auto plain = gtl::nn::make_model(config);
  lab04::forward_backward(*plain, small.images, small.labels);
  Recorded one("GradAccumulation.OneMicroBatchIsBitwiseThePlainStep");
  for (const auto& g : gradients(*plain)) one.expect_digest(g, "a gradient of k = 1");
  return "gradients within the derived bounds (k dividing n or not), k = 1 bitwise the plain step";
}

using lab04_cases::step_peak;

std::string accumulation_memory() {
  lab04::ModelConfig config;
  config.blocks = 4;
  const std::shared_ptr<gtl::Allocator> allocator = gtl::make_cpu_allocator();
  std::unique_ptr<gtl::nn::Sequential> model;
  lab04::LabBatch micro;
  {
    const gtl::AllocatorScope scope(allocator);
    model = gtl::nn::make_model(config);
    micro = lab04::make_batch(config, 33);  // the largest of 4 parts of 130 samples
  }
  const int64_t one = std::max(
      step_peak(allocator, [&] { lab04::forward_backward(*model, micro.images, micro.labels); }),
      step_peak(allocator, [&] {
        lab04::forward_backward(*model, micro.images, micro.labels, 1.f,
                                gtl::nn::GradMode::Accumulate);
      }));
  Recorded r("GradAccumulation.PeakHoldsOneMicroBatchOfActivations");
  gtl::judge::expect_equal(r.next<int64_t>("the peak"), one,
                           "the accumulated peak (one micro-batch's, measured by the judge)");
  return "the peak is one micro-batch's";
}

std::string checkpoint_memory() {
  lab04::ModelConfig config;
  config.blocks = 6;
  const int64_t batch = 16, D = config.hidden, C = config.classes;
  const int64_t head = 4 * batch * (2 * D + 2 + C);
  Recorded r("Checkpointing.HeldBytesFollowTheFormulaForEverySegmentLength");
  for (int64_t every : {1, 2, 3, 4, 6}) {
    const int64_t segments = (config.blocks + every - 1) / every;
    gtl::judge::expect_equal(r.next<int64_t>("held bytes"), head + segments * 4 * batch * D,
                             "the held bytes with segments of " + std::to_string(every));
  }
  return "held bytes follow the formula";
}

// The textbook cost of segments of k for L blocks (memory_lab.h, the handout's "Activation
// checkpointing"): ceil(L/k) kept inputs plus k recomputed blocks.
int64_t checkpoint_cost(int64_t blocks, int64_t k) {
  return (blocks + k - 1) / k + k;
}

// The smallest k in 1..L of least cost, by trying every k.
int64_t least_cost_length(int64_t blocks) {
  int64_t best = 1;
  for (int64_t k = 2; k <= blocks; ++k)
    if (checkpoint_cost(blocks, k) < checkpoint_cost(blocks, best)) best = k;
  return best;
}

std::string sqrt_policy() {
  Recorded r("Checkpointing.SqrtPolicyMinimisesTheTextbookCost");
  for (int64_t blocks : {1, 2, 3, 4, 5, 9, 10, 12, 16, 17, 100})
    gtl::judge::expect_equal(r.next<int64_t>("a length"), least_cost_length(blocks),
                             "sqrt_segment_length(" + std::to_string(blocks) + ")");
  const std::string seeded = "Checkpointing.SqrtPolicyMinimisesTheCostAtSeededBlockCounts";
  Recorded s(seeded);
  for (int64_t blocks : lab04_cases::seeded_block_counts(seeded, lab04_cases::kSeededBlockCounts))
    gtl::judge::expect_equal(s.next<int64_t>("a length"), least_cost_length(blocks),
                             "sqrt_segment_length(" + std::to_string(blocks) + ")");
  return "the least-cost length, the shortest among ties, for every L";
}

std::string checkpoint_recompute() {
  Recorded r("Checkpointing.EachCheckpointedModuleRunsForwardExactlyTwice");
  int checkpointed = 0;
  for (;;) {
    bool below = false;
    try {
      below = r.next<bool>("a module");
    } catch (const Rejection&) {
      break;
    }
    const int runs = r.next<int>("its forward count");
    if (runs != (below ? 2 : 1))
      throw Rejection("a module " + std::string(below ? "inside" : "outside") +
                      " a checkpoint ran forward " + std::to_string(runs) + " times");
    checkpointed += below;
  }
  if (checkpointed == 0) throw Rejection("no module sat inside a checkpoint");
  return "checkpointed modules ran twice, the others once";
}

std::string checkpoint_gradients() {
  lab04::ModelConfig config;
  config.blocks = 5;
  const lab04::LabBatch b = lab04::make_batch(config, 16);
  auto plain = gtl::nn::make_model(config);
  const float plain_loss = lab04::forward_backward(*plain, b.images, b.labels);
  Recorded r("Checkpointing.GradientsAreBitwiseThePlainModels");
  for (int run = 0; run < 3; ++run) {
    gtl::judge::expect_equal(r.next<float>("a loss"), plain_loss, "a checkpointed model's loss");
    for (const auto& g : gradients(*plain)) r.expect_digest(g, "a checkpointed model's gradient");
  }
  const lab04::LabBatch b1 = lab04::make_batch(config, lab04_cases::kCheckpointBatch, 1);
  const lab04::LabBatch b2 = lab04::make_batch(config, lab04_cases::kCheckpointBatch, 2);
  const std::vector<std::pair<std::string, lab04_cases::GradientRun>> runs = {
      {"Checkpointing.GradientsOverwriteThenAccumulateLikeThePlainModels",
       lab04_cases::overwrite_then_accumulate(*gtl::nn::make_model(config), b1, b2)},
      {"Checkpointing.GradientsOfTwoForwardsInFlightAreThePlainModels",
       lab04_cases::two_forwards_in_flight(*gtl::nn::make_model(config), b1, b2)}};
  for (const auto& [test, want] : runs) {
    Recorded recorded(test);
    for (int every = 1; every <= 3; ++every) {
      const std::string what = test + ", segments of " + std::to_string(every);
      for (float loss : want.losses)
        gtl::judge::expect_equal(recorded.next<float>("a loss"), loss, what + ": a loss");
      for (std::size_t k = 0; k < want.grads.size(); ++k)
        for (const auto& g : want.grads[k])
          recorded.expect_digest(g, "segments of " + std::to_string(every) +
                                        ": a gradient after backward " + std::to_string(k + 1) +
                                        " (the plain model's bits)");
    }
  }
  return "every checkpointed model's gradients are the plain model's bits, in both gradient "
         "modes and with two forwards in flight";
}

bool step_fits(int64_t limit, int64_t batch) {
  const std::shared_ptr<gtl::Allocator> allocator = gtl::make_cpu_allocator();
  allocator->set_memory_limit(limit);
  const gtl::AllocatorScope scope(allocator);
  try {
    lab04::train_step_once(lab04::ModelConfig{}, batch);
    return true;
  } catch (const gtl::OutOfMemoryError&) {
    return false;
  }
}

// The largest batch in [0, max_batch] whose step fits under `limit` (steps fit monotonically).
int64_t largest_fitting(int64_t limit, int64_t max_batch) {
  int64_t lo = 0, hi = max_batch;  // lo fits (0 trivially), answers in [lo, hi]
  while (lo < hi) {
    const int64_t mid = (lo + hi + 1) / 2;
    if (step_fits(limit, mid))
      lo = mid;
    else
      hi = mid - 1;
  }
  return lo;
}

std::string largest_batch() {
  for (int64_t limit : {int64_t(5) << 20, int64_t(12) << 20}) {
    Recorded r("LargestBatch.FindsTheLargestBatchUnderALimit.limit" + std::to_string(limit));
    gtl::judge::expect_equal(r.next<int64_t>("the largest batch"), largest_fitting(limit, 4096),
                             "the largest batch under " + gtl::format_bytes(limit));
  }
  Recorded none("LargestBatch.EveryBatchFitsOrNoneDoes");
  gtl::judge::expect_equal(none.next<int64_t>("the largest batch"),
                           largest_fitting(int64_t(1) << 20, 100), "the largest batch under 1 MiB");
  return "the largest batches the judge finds";
}

// ---- TODO 3: the timeline -----------------------------------------------------------------------
using lab04::Category;
constexpr int kCategories = lab04::kNumCategories;

// What the judge derives from a run's events on its own: the peak, the first event reaching it,
// every category's bytes just after it and every category's own peak.
struct Reference {
  std::vector<lab04::TimelineEvent> events;
  int64_t measured_peak = 0;  // the inner allocator's, as the test compares with
  int64_t peak = 0, peak_event = -1;
  std::array<int64_t, kCategories> at_peak{}, own_peak{};
};
Reference derive(std::vector<lab04::TimelineEvent> events) {
  Reference ref;
  ref.events = std::move(events);
  std::array<int64_t, kCategories> live{};
  for (std::size_t i = 0; i < ref.events.size(); ++i) {
    const lab04::TimelineEvent& e = ref.events[i];
    const auto c = static_cast<std::size_t>(e.category);
    live[c] += e.bytes;
    ref.own_peak[c] = std::max(ref.own_peak[c], live[c]);
    if (ref.peak_event < 0 || e.live > ref.peak) {
      ref.peak = e.live;
      ref.peak_event = static_cast<int64_t>(i);
      ref.at_peak = live;
    }
  }
  return ref;
}

// The run a timeline test recorded, replayed by the lab's pristine harness (record_training_step)
// with the judge's recorder (below): the same allocations in the same order.
Reference replay(const Shape& shape) {
  lab04::MemoryTimeline timeline;
  const lab04::RecordedRun run =
      lab04::record_training_step(shape.config, shape.batch, lab04_cases::kTimelineSteps, timeline);
  if (run.observed.size() != timeline.events().size())
    throw std::runtime_error("the judge's recorder missed events of the run");
  for (std::size_t i = 0; i < run.observed.size(); ++i)
    if (timeline.events()[i].live != run.observed[i])
      throw std::runtime_error("the judge's recorder disagrees with the allocator at event " +
                               std::to_string(i));
  Reference ref = derive(timeline.events());
  ref.measured_peak = run.measured_peak;
  return ref;
}

// The runs the tests record: the fixed one and the one drawn from the grading seed.
struct Run {
  std::string name;  // the tests' word for it, in rejections
  Shape shape;
};
std::vector<Run> runs() {
  return {{"the fixed run (" + lab04_cases::fixed_timeline_shape().shape() + ")",
           lab04_cases::fixed_timeline_shape()},
          {"the seeded run (" + lab04_cases::seeded_timeline_shape().shape() + ")",
           lab04_cases::seeded_timeline_shape()}};
}

// Three sequences (categories, bytes, live), as the tests' record_events writes them, against
// the judge's events.
void expect_events(Recorded& r, const std::vector<lab04::TimelineEvent>& want,
                   const std::string& what) {
  const auto categories = r.sequence<int64_t>(what + ": the categories", want.size());
  const auto bytes = r.sequence<int64_t>(what + ": the bytes", want.size());
  const auto live = r.sequence<int64_t>(what + ": the live bytes", want.size());
  for (std::size_t i = 0; i < want.size(); ++i) {
    const lab04::TimelineEvent got{Category(categories[i]), bytes[i], live[i]};
    if (!(got == want[i]))
      throw Rejection(r.test() + ": " + what + ", event " + std::to_string(i) + " is (" +
                      std::to_string(categories[i]) + ", " + std::to_string(bytes[i]) + ", " +
                      std::to_string(live[i]) + "), the judge records (category " +
                      std::to_string(int(want[i].category)) + ", bytes " +
                      std::to_string(want[i].bytes) + ", live " + std::to_string(want[i].live) +
                      ")");
  }
}

std::string timeline_replay() {
  const std::vector<std::string> tests = {
      "MemoryTimeline.ReplaysTheAllocatorStatisticsAtEveryEvent",
      "MemoryTimeline.ReplaysASeededRun"};
  const std::vector<Run> rs = runs();
  for (std::size_t i = 0; i < rs.size(); ++i) {
    const Reference ref = replay(rs[i].shape);
    Recorded r(tests[i]);
    expect_events(r, ref.events, rs[i].name);
    gtl::judge::expect_equal(r.next<int64_t>("live_bytes()"), int64_t{0},
                             tests[i] + ": live_bytes() at the end of " + rs[i].name);
    for (int c = 0; c < kCategories; ++c)
      gtl::judge::expect_equal(r.next<int64_t>("live_bytes(c)"), int64_t{0},
                               tests[i] + ": live_bytes(" + lab04::category_name(Category(c)) +
                                   ") at the end of " + rs[i].name);
  }
  // The fixed scenario of FreesAreMatchedToTheirAllocations, by the rules the header states.
  Recorded f("MemoryTimeline.FreesAreMatchedToTheirAllocations");
  const std::string frees = f.test() + ": ";
  gtl::judge::expect_equal(f.next<std::size_t>("the events"), std::size_t{2},
                           frees + "events after two allocations and a 0-byte one");
  expect_values(f, {0, 30, 30}, "the live bytes (weights, activations, all) after the free");
  expect_events(f,
                {{Category::Weights, 100, 100},
                 {Category::Activations, 30, 130},
                 {Category::Weights, -100, 30}},
                "the events of the scenario");
  gtl::judge::expect_equal(f.next<int64_t>("the live bytes"), int64_t{30},
                           frees + "the live bytes after two rejected frees");
  gtl::judge::expect_equal(f.next<std::size_t>("the events"), std::size_t{3},
                           frees + "the events after two rejected frees");
  return "every event of both runs (fixed and seeded) is the judge's, frees matched";
}

std::string timeline_peak() {
  const std::vector<std::string> tests = {"MemoryTimeline.PeakIsTheMeasuredPeakToTheByte",
                                          "MemoryTimeline.PeakOfASeededRunIsTheMeasuredPeak"};
  const std::vector<Run> rs = runs();
  for (std::size_t i = 0; i < rs.size(); ++i) {
    const Reference ref = replay(rs[i].shape);
    if (ref.peak != ref.measured_peak)
      throw std::runtime_error("the judge's peak is not the allocator's for " + rs[i].name);
    Recorded r(tests[i]);
    gtl::judge::expect_equal(r.next<int64_t>("peak_bytes()"), ref.peak,
                             tests[i] + ": peak_bytes() of " + rs[i].name);
    gtl::judge::expect_equal(r.next<int64_t>("peak_event()"), ref.peak_event,
                             tests[i] + ": peak_event() of " + rs[i].name);
  }
  // Events 0 and 2 both reach 100 bytes: the first is the peak's.
  Recorded first("MemoryTimeline.PeakEventIsTheFirstToReachThePeak");
  expect_values(first, {100, 0, 100, 0},
                "peak_bytes, peak_event and the bytes at the peak of activations, temporaries");
  return "the peak and its first event, fixed and seeded runs";
}

// A category's bytes at the peak and its own peak, as the tests record them, against the judge's.
void expect_category_pairs(Recorded& r, const Reference& ref, const std::string& what) {
  for (int c = 0; c < kCategories; ++c) {
    const std::string name = lab04::category_name(Category(c));
    gtl::judge::expect_equal(r.next<int64_t>("bytes_at_peak"), ref.at_peak[std::size_t(c)],
                             r.test() + ": bytes_at_peak(" + name + ") of " + what);
    gtl::judge::expect_equal(r.next<int64_t>("peak_bytes(c)"), ref.own_peak[std::size_t(c)],
                             r.test() + ": peak_bytes(" + name + ") of " + what);
  }
}

std::string timeline_categories() {
  const std::vector<std::string> tests = {"MemoryTimeline.CategoriesAtThePeakMatchTheFormulas",
                                          "MemoryTimeline.CategoriesOfASeededRunMatchTheFormulas"};
  const std::vector<Run> rs = runs();
  for (std::size_t i = 0; i < rs.size(); ++i) {
    Recorded r(tests[i]);
    expect_category_pairs(r, replay(rs[i].shape), rs[i].name);
  }
  return "every category's bytes at the peak and own peak, fixed and seeded runs";
}

std::string timeline_json() {
  const std::vector<std::string> json = {"MemoryTimeline.JsonRoundTrips",
                                         "MemoryTimeline.JsonOfASeededRunRoundTrips"};
  const std::vector<std::string> summary = {
      "MemoryTimeline.SummaryNamesThePeakAndEachCategory",
      "MemoryTimeline.SummaryOfASeededRunNamesThePeakAndEachCategory"};
  const std::vector<Run> rs = runs();
  for (std::size_t i = 0; i < rs.size(); ++i) {
    const Reference ref = replay(rs[i].shape);
    Recorded j(json[i]);
    const std::string in = " in the JSON of " + rs[i].name;
    const std::size_t n = ref.events.size();
    const auto names = j.sequence<std::string>("the categories" + in, n);
    const auto bytes = j.sequence<int64_t>("the bytes" + in, n);
    const auto live = j.sequence<int64_t>("the live bytes" + in, n);
    for (std::size_t e = 0; e < n; ++e) {
      const std::string want = lab04::category_name(ref.events[e].category);
      if (names[e] != want || bytes[e] != ref.events[e].bytes || live[e] != ref.events[e].live)
        throw Rejection(j.test() + ": event " + std::to_string(e) + in + " is {\"" + names[e] +
                        "\", " + std::to_string(bytes[e]) + ", " + std::to_string(live[e]) +
                        "}, the judge records {\"" + want + "\", " +
                        std::to_string(ref.events[e].bytes) + ", " +
                        std::to_string(ref.events[e].live) + "}");
    }
    gtl::judge::expect_equal(j.next<int64_t>("peak.bytes"), ref.peak,
                             j.test() + ": peak.bytes" + in);
    gtl::judge::expect_equal(j.next<int64_t>("peak.event"), ref.peak_event,
                             j.test() + ": peak.event" + in);
    for (int c = 0; c < kCategories; ++c)
      gtl::judge::expect_equal(
          j.next<int64_t>("peak.by_category"), ref.at_peak[std::size_t(c)],
          j.test() + ": peak.by_category." + lab04::category_name(Category(c)) + in);
    const std::string back = "the timeline read back from the JSON of " + rs[i].name;
    expect_events(j, ref.events, back);
    gtl::judge::expect_equal(j.next<int64_t>("peak_bytes()"), ref.peak,
                             j.test() + ": peak_bytes() of " + back);
    gtl::judge::expect_equal(j.next<int64_t>("peak_event()"), ref.peak_event,
                             j.test() + ": peak_event() of " + back);
    expect_category_pairs(j, ref, back);

    Recorded s(summary[i]);
    const std::string text = s.line("the summary");
    std::vector<std::string> wanted = {std::to_string(ref.peak)};
    for (int c = 0; c < kCategories; ++c)
      wanted.push_back(std::string(lab04::category_name(Category(c))) + ": " +
                       std::to_string(ref.at_peak[std::size_t(c)]));
    for (const std::string& w : wanted)
      if (text.find(w) == std::string::npos)
        throw Rejection(s.test() + ": the summary of " + rs[i].name + " lacks \"" + w +
                        "\" (the judge's figure); it reads: " + text);
  }
  return "the JSON, its round trip and the summary, fixed and seeded runs";
}

// ---- TODO 7: the fixed loop ---------------------------------------------------------------------
std::string fixed_loop() {
  // The results: the pristine hungry loop's, recomputed on the same model, AdamW and batches.
  lab04_cases::LoopSetup hungry;
  lab04::LoopLog want;
  {
    const gtl::AllocatorScope scope(hungry.allocator);
    want = lab04::hungry_train_loop(*hungry.model, *hungry.adamw, hungry.batches);
  }
  const std::size_t steps = lab04_cases::kLoopSteps;
  Recorded r("TrainingLoop.ResultsAreBitwiseTheHungryLoops");
  const auto losses = r.sequence<float>("the losses", steps);
  const auto correct = r.sequence<int64_t>("the correct counts", steps);
  const auto norms = r.sequence<double>("the gradient norms", steps);
  for (std::size_t s = 0; s < steps; ++s) {
    const std::string step = r.test() + ": step " + std::to_string(s) + "'s ";
    gtl::judge::expect_equal(losses[s], want.losses[s], step + "loss");
    gtl::judge::expect_equal(correct[s], want.correct[s], step + "correct count");
    gtl::judge::expect_equal(norms[s], want.grad_norms[s], step + "gradient norm");
  }
  for (const std::vector<float>& w : hungry.weights()) r.expect_digest(w, "a final weight");

  // The memory: at most one step's peak above the fixed state (the judge measures it), and at
  // least what one forward holds (its saved activations and logits), which any loop that runs
  // the model's forward must hold at once.
  lab04_cases::LoopSetup setup;
  const int64_t one_step = setup.one_step_peak();
  int64_t forward = 0;
  {
    const gtl::AllocatorScope scope(setup.allocator);
    const int64_t before = setup.allocator->stats().allocated_bytes;
    gtl::nn::Context ctx;
    const Tensor logits = setup.model->forward(setup.batches[0].images, ctx);
    forward = setup.allocator->stats().allocated_bytes - before;
  }
  Recorded p("TrainingLoop.PeakStaysWithinOneStep");
  const int64_t loop = p.next<int64_t>("the loop's peak");
  if (!(loop <= one_step && loop >= forward))
    throw Rejection(p.test() + ": the loop's peak above the model, AdamW and batches is " +
                    std::to_string(loop) + " bytes; the judge measures one step at " +
                    std::to_string(one_step) + " (the bound) and one forward at " +
                    std::to_string(forward) + " (what any loop holds)");
  return "logs and weights bitwise the hungry loop's, peak within one step's";
}

}  // namespace

// The judge's recorder for the timeline replays: the lab's TimelineAllocator calls these two, and
// the judge derives everything else from the events itself (derive above), never from code a
// student wrote.
namespace lab04 {
struct MemoryTimeline::State {
  std::unordered_map<const void*, std::pair<int64_t, Category>> live;  // bytes, category
  std::array<int64_t, kNumCategories> live_by_category{};
  int64_t total() const {
    int64_t live_bytes = 0;
    for (int64_t b : live_by_category) live_bytes += b;
    return live_bytes;
  }
};
MemoryTimeline::MemoryTimeline() : state_(std::make_unique<State>()) {}
MemoryTimeline::~MemoryTimeline() = default;
void MemoryTimeline::on_alloc(const void* ptr, int64_t bytes, Category category) {
  if (ptr == nullptr || bytes <= 0) return;
  state_->live[ptr] = {bytes, category};
  state_->live_by_category[static_cast<std::size_t>(category)] += bytes;
  events_.push_back({category, bytes, state_->total()});
}
void MemoryTimeline::on_free(const void* ptr) {
  const auto it = state_->live.find(ptr);
  if (it == state_->live.end())
    throw gtl::Error("the judge's recorder: free of a pointer not live");
  const auto [bytes, category] = it->second;
  state_->live.erase(it);
  state_->live_by_category[static_cast<std::size_t>(category)] -= bytes;
  events_.push_back({category, -bytes, state_->total()});
}
}  // namespace lab04

int main(int argc, char** argv) {
  return gtl::judge::run(argc, argv,
                         {{"calculator-persistent", calculator_persistent},
                          {"calculator-activations", calculator_activations},
                          {"calculator-peak", calculator_peak},
                          {"calculator-amp", calculator_amp},
                          {"allocator-rules", allocator_rules},
                          {"allocator-oom", allocator_oom},
                          {"allocator-steady-state", allocator_steady_state},
                          {"accumulation-memory", accumulation_memory},
                          {"checkpoint-memory", checkpoint_memory},
                          {"sqrt-policy", sqrt_policy},
                          {"checkpoint-recompute", checkpoint_recompute},
                          {"largest-batch", largest_batch},
                          {"accumulation-gradients", accumulation_gradients},
                          {"checkpoint-gradients", checkpoint_gradients},
                          {"timeline-replay", timeline_replay},
                          {"timeline-peak", timeline_peak},
                          {"timeline-categories", timeline_categories},
                          {"timeline-json", timeline_json},
                          {"fixed-loop", fixed_loop}});
}
