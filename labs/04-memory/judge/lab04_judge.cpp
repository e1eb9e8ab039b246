// The judge of lab 04 (docs/grader.md, "The judge"): built from the course alone (the lab's
// header and the core), never from the student's files. gtl-grade runs `lab04_judge <check>`
// after the check's tests; each case reads what those tests recorded (gtl_judge_output.h) and
// recomputes it: the core's allocator measures the bytes of a step (the calculator), the core's
// forward and backward give the whole-batch and plain-model gradients (accumulation,
// checkpointing), a training step under a memory limit finds the largest batch, and the core's
// allocator counts a training step's allocations (steady state). The caching allocator's rules
// on the tests' fixed scenarios, the segment lengths and the forward counts are checked against
// the rules the handout states, from the lab header's constants: the tests' inputs are fixed, so
// these cases stop forged verdicts, not outputs copied from a finished run (docs/grader.md).
#include <cmath>
#include <limits>
#include <string>
#include <vector>

#include "gtl/nn/parameter_buffer.h"
#include "gtl/optim/adamw.h"
#include "gtl_judge.h"
#include "memory_lab.h"

namespace {

using gtl::Tensor;
using gtl::judge::Recorded;
using gtl::judge::Rejection;
using lab04::LabCachingAllocator;

// What the CPU allocator measures for one float32 step of `config` at `batch` (the tests' own
// measurement, memory_calculator_test.cpp).
struct Measured {
  int64_t persistent = 0, batch = 0, activations = 0, peak = 0;
};
Measured measure_step(const lab04::ModelConfig& config, int64_t batch) {
  const std::shared_ptr<gtl::Allocator> allocator = gtl::make_cpu_allocator();
  const gtl::AllocatorScope scope(allocator);
  auto model = gtl::nn::make_model(config);
  gtl::optim::AdamW adamw(model->parameters());
  Measured m;
  m.persistent = allocator->stats().allocated_bytes;
  const lab04::LabBatch b = lab04::make_batch(config, batch);
  m.batch = allocator->stats().allocated_bytes - m.persistent;
  allocator->reset_peak_stats();
  const gtl::nn::CrossEntropyLoss head;
  gtl::nn::Context ctx, loss_ctx;
  const Tensor logits = model->forward(b.images, ctx);
  m.activations = allocator->stats().allocated_bytes - m.persistent - m.batch;
  head.forward(logits, b.labels, loss_ctx);
  model->backward(ctx, head.backward(loss_ctx));
  adamw.step();
  m.peak = allocator->stats().peak_allocated_bytes;
  return m;
}

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
  return "counts and persistent bytes exact";
}

std::string calculator_activations() {
  Recorded r("MemoryCalculator.ActivationBytesAreExactAcrossBatchAndDepth");
  for (int64_t blocks : {1, 2, 4})
    for (int64_t batch : {1, 16, 64, 256})
      gtl::judge::expect_equal(r.next<int64_t>("an estimate"),
                               measure_step(with_blocks(blocks), batch).activations,
                               "the activations of " + std::to_string(blocks) + " blocks, batch " +
                                   std::to_string(batch));
  return "every activation estimate equals the measured bytes";
}

std::string calculator_peak() {
  Recorded r("MemoryCalculator.PeakWithinTwoPercentOfTheMeasuredPeak");
  for (int64_t hidden : {32, 64})
    for (int64_t blocks : {1, 2, 4})
      for (int64_t batch : {1, 16, 64, 256, 1024}) {
        lab04::ModelConfig config = with_blocks(blocks);
        config.hidden = hidden;
        const int64_t predicted = r.next<int64_t>("a peak");
        const int64_t measured = measure_step(config, batch).peak;
        if (!(std::abs(double(predicted - measured)) <= 0.02 * double(measured)))
          throw Rejection("the peak predicted for D = " + std::to_string(hidden) + ", " +
                          std::to_string(blocks) + " blocks, batch " + std::to_string(batch) +
                          " is " + std::to_string(predicted) + ", the measured " +
                          std::to_string(measured) + " (beyond 2%)");
      }
  return "every peak within 2% of the measured one";
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
  Recorded peak("MemoryCalculatorAmp.PeakWithinTwoPercentOfTheMeasuredPeak");
  for (const auto& policy : policies)
    for (int64_t hidden : {32, 64})
      for (int64_t blocks : {1, 2, 4})
        for (int64_t batch : {1, 16, 64, 256, 1024}) {
          lab04::ModelConfig config = with_blocks(blocks);
          config.hidden = hidden;
          const int64_t predicted = peak.next<int64_t>("a peak");
          const int64_t measured = measure_amp_step(config, batch, policy).peak;
          if (!(std::abs(double(predicted - measured)) <= 0.02 * double(measured)))
            throw Rejection("the peak predicted under " + policy.name() +
                            " for D = " + std::to_string(hidden) + ", " + std::to_string(blocks) +
                            " blocks, batch " + std::to_string(batch) + " is " +
                            std::to_string(predicted) + ", the measured " +
                            std::to_string(measured) + " (beyond 2%)");
        }
  return "every mixed-precision term exact and every peak within 2% of the measured one";
}

int64_t rounded(int64_t bytes) {
  const int64_t r = int64_t(LabCachingAllocator::kRound);
  return (bytes + r - 1) / r * r;
}
void expect_values(Recorded& r, const std::vector<int64_t>& want, const std::string& what) {
  if (r.sequence<int64_t>(what, want.size()) != want)
    throw Rejection(r.test() + ": " + what + " break the allocator's rules");
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
  return "every rule holds on the tests' scenarios";
}

std::string allocator_oom() {
  const int64_t segment = int64_t(LabCachingAllocator::kSegment);
  Recorded r("CachingAllocator.OutOfMemoryReleasesTheCacheAndChangesNothing");
  expect_values(r, {1, 1000, segment, 3 * segment}, "the statistics around the OOM");
  return "the OOM is counted, changes nothing and frees the cache";
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
  const lab04::LabBatch small = lab04::make_batch(config, 32);
  auto plain = gtl::nn::make_model(config);
  lab04::forward_backward(*plain, small.images, small.labels);
  Recorded one("GradAccumulation.OneMicroBatchIsBitwiseThePlainStep");
  for (const auto& g : gradients(*plain)) one.expect_digest(g, "a gradient of k = 1");
  return "gradients within the derived bound, k = 1 bitwise the plain step";
}

// Peak bytes above what was allocated before `step` ran (the test's measurement).
template <typename F>
int64_t step_peak(const std::shared_ptr<gtl::Allocator>& allocator, F step) {
  const gtl::AllocatorScope scope(allocator);
  allocator->reset_peak_stats();
  const int64_t before = allocator->stats().allocated_bytes;
  step();
  return allocator->stats().peak_allocated_bytes - before;
}

std::string accumulation_memory() {
  lab04::ModelConfig config;
  config.blocks = 4;
  const std::shared_ptr<gtl::Allocator> allocator = gtl::make_cpu_allocator();
  std::unique_ptr<gtl::nn::Sequential> model;
  lab04::LabBatch micro;
  {
    const gtl::AllocatorScope scope(allocator);
    model = gtl::nn::make_model(config);
    micro = lab04::make_batch(config, 32);
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

std::string sqrt_policy() {
  Recorded r("Checkpointing.SqrtPolicyIsCeilOfSqrt");
  for (int64_t blocks : {1, 2, 3, 4, 5, 9, 10, 16, 17, 100}) {
    int64_t k = 1;
    while (k * k < blocks) ++k;
    gtl::judge::expect_equal(r.next<int64_t>("a length"), k,
                             "sqrt_segment_length(" + std::to_string(blocks) + ")");
  }
  return "ceil(sqrt(L)) for every L";
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
  return "every checkpointed model's gradients are the plain model's bits";
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

}  // namespace

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
                          {"checkpoint-gradients", checkpoint_gradients}});
}
