// The judge of lab 03 (docs/grader.md, "The judge"): built from the course alone (the lab's
// header and test cases, the core), never from the student's files. gtl-grade runs
// `lab03_judge <check>` after the check's tests; each case reads what those tests recorded
// (gtl_judge_output.h) and recomputes it with the core's reference implementations on the same
// inputs (lab03_cases.h): the core's rounding, LossScaler, MasterWeights, clip_grad_norm_ and
// Trainer, and the saved bytes the core's forward measures.
#include <cmath>
#include <memory>
#include <string>
#include <vector>

#include "amp_loop.h"
#include "gtl/data/synthetic_digits.h"
#include "gtl/memory/allocator.h"
#include "gtl/optim/grad_clip.h"
#include "gtl/optim/master_weights.h"
#include "gtl/tensor/half.h"
#include "gtl/train/trainer.h"
#include "gtl_judge.h"
#include "lab03_cases.h"

// The reference end of a step (unscale, clip, step, update) for the shared training loop
// (amp_loop.h), which names the lab's function: the judge links none of the student's code.
lab03::StepOutcome lab03::finish_amp_step(GradScaler& scaler, const std::vector<ParamRef>& params,
                                          gtl::optim::Optimizer& optimizer, float max_norm) {
  StepOutcome out;
  const bool overflow = scaler.unscale_(params);
  if (!overflow && max_norm > 0)
    out.grad_norm = gtl::optim::clip_grad_norm_(params, max_norm).item();
  out.stepped = scaler.step(optimizer);
  scaler.update();
  return out;
}

namespace {

using gtl::DType;
using gtl::judge::Recorded;
using gtl::judge::Rejection;
using gtl::nn::PrecisionPolicy;

// TODO 2a's reference: the ops autocast runs in the policy's compute dtype (torch.autocast's
// lists, as the core's layers do); every other op stays float32.
bool runs_in_half(lab03::Op op) {
  return op == lab03::Op::MatMul || op == lab03::Op::Conv2d || op == lab03::Op::Activation;
}

// TODO 7's reference: the capstone's CPU row at `o`, measured as the handout's "Expected figures"
// defines its peak (the training thread's own: the bytes building the trainer left allocated plus
// the steps' own peak, the loader's batches left out).
struct CapstoneReplay {
  int64_t peak = 0;
  float accuracy = 0.f, loss = 0.f;
};
CapstoneReplay replay_capstone_cpu_row(const lab03::CapstoneOptions& o) {
  auto train = std::make_shared<gtl::data::SyntheticDigits>(o.train_size);
  gtl::data::SyntheticDigits test(o.eval_samples, gtl::data::Split::Test);
  gtl::train::TrainerOptions to;
  const std::shared_ptr<gtl::Allocator> built = gtl::make_cpu_allocator();
  std::unique_ptr<gtl::train::Trainer> trainer;
  {
    const gtl::AllocatorScope scope(built);
    trainer = std::make_unique<gtl::train::Trainer>(to, train);
  }
  CapstoneReplay r;
  const int64_t state = built->stats().allocated_bytes;
  const std::shared_ptr<gtl::Allocator> steps = gtl::make_cpu_allocator();
  const gtl::AllocatorScope scope(steps);
  for (int64_t s = 0; s < o.steps; ++s) r.loss = trainer->step().loss;
  r.peak = state + steps->stats().peak_allocated_bytes;
  r.accuracy = trainer->evaluate(test, o.eval_samples).accuracy;
  return r;
}

std::string fp16_rounding() {
  Recorded r("NumberFormats.Fp16AgreesWithTheGpuRoundingOnASweepOfBitPatterns");
  r.expect_digest(lab03_cases::rounding_sweep(gtl::float_to_half_bits),
                  "round_to_fp16 over the seeded sweep of bit patterns");
  return "every fp16 rounding of the sweep exact";
}

std::string bf16_rounding() {
  Recorded r("NumberFormats.Bf16AgreesWithTheGpuRoundingOnASweepOfBitPatterns");
  r.expect_digest(lab03_cases::rounding_sweep(gtl::float_to_bfloat16_bits),
                  "round_to_bf16 over the seeded sweep of bit patterns");
  return "every bf16 rounding of the sweep exact";
}

// The reference of count_underflow (given, over the student's 1a and 1b): of the non-zero finite
// values, how many the core's rounding (the GPU's, bit for bit) turns into a zero of either sign.
lab03::UnderflowReport expected_underflow(const std::vector<float>& values) {
  lab03::UnderflowReport r;
  for (float x : values) {
    if (x == 0.f || !std::isfinite(x)) continue;
    ++r.nonzero;
    r.fp16_zeros += static_cast<float>(gtl::half(x)) == 0.f;
    r.bf16_zeros += static_cast<float>(gtl::bfloat16(x)) == 0.f;
  }
  return r;
}

void expect_counts(const char* test, const std::vector<float>& values) {
  Recorded r(test);
  const lab03::UnderflowReport want = expected_underflow(values);
  const std::string of = std::string(" of ") + test;
  gtl::judge::expect_equal(r.next<int64_t>("nonzero"), want.nonzero,
                           "the non-zero finite count" + of);
  gtl::judge::expect_equal(r.next<int64_t>("fp16_zeros"), want.fp16_zeros,
                           "the values that round to a zero in fp16" + of);
  gtl::judge::expect_equal(r.next<int64_t>("bf16_zeros"), want.bf16_zeros,
                           "the values that round to a zero in bf16" + of);
}

std::string underflow() {
  expect_counts("Underflow.CountsOnARealGradientMatchTheGpuRounding",
                lab03_cases::lab_model_gradient().to_vector());
  expect_counts("Underflow.ScaledValuesShowWhatTheLossScalerRescues",
                lab03_cases::scaler_rescue_values());
  expect_counts("Underflow.SeededValuesMatchTheGpuRounding",
                lab03_cases::seeded_underflow_values());
  return "every count exact";
}

// The answers are only counted: a rejection that named the op would hand over the list.
std::string autocast() {
  Recorded r("Autocast.MatmulsInHalfTheFloat32IslandsStayFloat32");
  int wrong = 0, answers = 0;
  for (const PrecisionPolicy& policy : lab03_cases::policies())
    for (lab03::Op op : lab03_cases::all_ops()) {
      const DType want = runs_in_half(op) ? policy.compute : DType::Float32;
      wrong += r.next<int>("a dtype") != static_cast<int>(want);
      ++answers;
    }
  if (wrong != 0)
    throw Rejection("autocast_dtype: " + std::to_string(wrong) + " of " + std::to_string(answers) +
                    " (op, policy) answers differ from the judge's lists (TODO 2a, the "
                    "handout's \"Tensor cores\")");
  return "every op's dtype right";
}

std::string activation_memory() {
  Recorded r("ActivationMemory.PredictedBytesEqualTheSavedContextExactly");
  const int64_t batch = lab03_cases::seeded_batch();
  for (const auto& config : lab03_cases::activation_configs())
    for (const PrecisionPolicy& policy : lab03_cases::policies())
      gtl::judge::expect_equal(r.next<int64_t>("a prediction"),
                               lab03_cases::measured_saved_bytes(config, batch, policy),
                               "saved_activation_bytes(hidden " + std::to_string(config.hidden) +
                                   ", " + std::to_string(config.blocks) + " blocks, batch " +
                                   std::to_string(batch) + ", " + policy.name() + ")");
  return "every prediction equals the bytes the core's forward saves";
}

// The compute copy `round` makes of every parameter of `model` a layer reads through one, one
// digest each.
template <typename Round>
void expect_copies(Recorded& r, gtl::nn::Module& model, const std::vector<bool>& multiplied,
                   Round round, const std::string& what) {
  const std::vector<gtl::optim::ParamRef> params = model.parameters();
  for (std::size_t k = 0; k < params.size(); ++k) {
    const gtl::optim::ParamRef& p = params[k];
    if (!multiplied[k]) continue;
    std::vector<uint16_t> want;
    for (float v : p.value.to_vector()) want.push_back(round(v));
    r.expect_digest(want, what + " of '" + p.name + "'");
  }
}

std::string weight_copy() {
  Recorded every("HalfWeightCache.EachParameterALayerReadsThroughWeightAsGetsOneCopy");
  for (const gtl::nn::ModelConfig& c : lab03_cases::cache_configs()) {
    auto m = gtl::nn::make_model(c);
    const std::vector<bool> read = lab03_cases::read_through_compute_copy(c);
    const std::vector<gtl::optim::ParamRef> params = m->parameters();
    int64_t bytes = 0;
    for (std::size_t k = 0; k < params.size(); ++k)
      if (read[k]) bytes += 2 * params[k].value.numel();
    gtl::judge::expect_equal(every.next<int64_t>("bytes()"), bytes,
                             "HalfWeightCache::bytes() on the " + c.kind);
    expect_copies(every, *m, read, gtl::float_to_bfloat16_bits, "the " + c.kind + "'s bf16 copy");
  }
  gtl::nn::ModelConfig config;
  auto model = gtl::nn::make_model(config);
  const std::vector<bool> multiplied = lab03_cases::read_through_compute_copy(config);
  Recorded refreshed("HalfWeightCache.RefreshRewritesInPlaceWithoutAllocating");
  for (int step = 1; step <= 2; ++step) {
    lab03_cases::write_seeded_values(*model, step);
    expect_copies(refreshed, *model, multiplied, gtl::float_to_half_bits,
                  "the fp16 copy refreshed after step " + std::to_string(step));
  }
  return "every copy exact";
}

std::string loss_scaler() {
  Recorded r("LossScaler.FollowsASeededScript");
  const lab03_cases::ScalerScript script = lab03_cases::seeded_scaler_script();
  lab03_cases::CoreScaler core(script.init_scale, script.growth_interval);
  int step = 1;
  for (const auto& want : lab03_cases::run_scaler_script(core, script)) {
    const std::string at = "step " + std::to_string(step++) + " of the seeded script";
    gtl::judge::expect_equal(r.next<bool>(at), want.found, at + ": unscale_'s verdict");
    gtl::judge::expect_equal(r.next<bool>(at), want.stepped, at + ": whether it stepped");
    gtl::judge::expect_equal(r.next<float>(at), want.scale, at + ": the scale after update");
    gtl::judge::expect_equal(r.next<float>(at), want.value, at + ": the parameter");
  }
  return "the whole seeded script follows the core's scaler";
}

std::string master_weights() {
  Recorded r("MasterWeights.SeededValuesWidenAndRoundBackLikeTheCore");
  const auto want = lab03_cases::master_weights_scenario<gtl::optim::MasterWeights>(
      [](const gtl::optim::MasterWeights& m) -> const std::vector<gtl::optim::ParamRef>& {
        return m.params();
      });
  const char* what[] = {"the masters", "the master gradients",
                        "the master gradients after a second backward",
                        "the model after refresh_model"};
  for (std::size_t k = 0; k < 4; ++k) {
    const std::vector<float> got = r.sequence<float>(what[k], want[k].size());
    for (std::size_t i = 0; i < got.size(); ++i)
      if (gtl::float_bits(got[i]) != gtl::float_bits(want[k][i]))
        throw Rejection(std::string(what[k]) + "[" + std::to_string(i) + "] is " +
                        gtl::judge::show(got[i]) + ", the core's " + gtl::judge::show(want[k][i]));
  }
  return "masters, gradients of two backwards and refresh exact";
}

std::string amp_step_clipping() {
  Recorded r("ClipByGlobalNorm.SeededGradientsClipLikeTheCore");
  auto [want, max_norm] = lab03_cases::seeded_clip_case();
  const double norm = gtl::optim::clip_grad_norm_(want, max_norm).item();
  const float got_norm = r.next<float>("the norm");
  if (!(std::fabs(got_norm - norm) <= 1e-5 * norm))
    throw Rejection("clip_by_global_norm returned " + gtl::judge::show(got_norm) +
                    " for the seeded gradients, the core's norm is " + gtl::judge::show(norm));
  for (const auto& p : want) {
    const std::vector<float> w = p.grad.to_vector();
    gtl::judge::expect_close({w.begin(), w.end()},
                             r.sequence<float>("a clipped gradient", w.size()), 1e-5, 1e-7,
                             "the clipped gradients");
  }
  return "norm and clipped gradients within the test's tolerance";
}

// A recorded run (loss, stepped, scale per step) against the same loop with the core's scaler.
void expect_run(const char* test, float init_scale, int steps) {
  lab03_cases::CoreScaler core(init_scale);
  const auto want =
      lab03_test::train_lab_model(PrecisionPolicy::fp16(), &core, steps, lab03_test::StepEnd::Step);
  Recorded r(test);
  const float tolerance = 4.f * 0x1p-11f * std::log(10.f);  // the test's, README "How close"
  for (std::size_t i = 0; i < want.size(); ++i) {
    const std::string at = std::string(test) + " step " + std::to_string(i);
    const float loss = r.next<float>(at);
    gtl::judge::expect_equal(r.next<bool>(at), want[i].stepped, at + ": whether it stepped");
    gtl::judge::expect_equal(r.next<float>(at), want[i].scale, at + ": the scale");
    if (std::isfinite(want[i].loss) && !(std::fabs(loss - want[i].loss) <= tolerance))
      throw Rejection(at + ": the loss is " + gtl::judge::show(loss) + ", with the core's scaler " +
                      gtl::judge::show(want[i].loss));
  }
}

std::string amp_training() {
  expect_run("AmpTraining.Fp16WithYourScalerTracksTheFloat32LossCurve", 65536.f, 60);
  expect_run("AmpTraining.ADeliberatelyOverflowingRunRecovers", 0x1p40f, 40);
  return "both runs follow the core's scaler";
}

// TODO 6's reference: each field of a recipe follows from what its compute format does to the
// numbers of training, measured with the core's rounding.
float round_to(DType format, float x) {
  if (format == DType::Float16) return static_cast<float>(gtl::half(x));
  if (format == DType::BFloat16) return static_cast<float>(gtl::bfloat16(x));
  return x;
}
// Of the Underflow test's gradient-like values (1e-12 to 1e-1, both signs), how many the format
// rounds to zero: a format that loses gradients float32 keeps needs its loss scaled.
int64_t gradients_lost(DType format) {
  int64_t lost = 0;
  for (float g : lab03_cases::seeded_underflow_values())
    lost += g != 0.f && std::isfinite(g) && round_to(format, g) == 0.f;
  return lost;
}
// A weight of 1 stepped by an AdamW-sized update of -1e-4, 100 times, in the format itself: a
// format that ends more than half the total (0.005) away from 0.99 loses the updates, and the
// optimizer needs float32 masters.
float weight_after_updates(DType format) {
  float w = 1.f;
  for (int i = 0; i < 100; ++i) w = round_to(format, w - 1e-4f);
  return w;
}

std::string bf16_recipe() {
  Recorded r("AmpRecipe.EachPrecisionHasItsRecipe");
  for (const PrecisionPolicy& p :
       {PrecisionPolicy::fp32(), PrecisionPolicy::fp16(), PrecisionPolicy::bf16()}) {
    const std::string what = std::string("amp_recipe(\"") + p.name() + "\")";
    const int64_t lost = gradients_lost(p.compute);
    const float weight = weight_after_updates(p.compute);
    const bool scaling = lost > 0, masters = !(std::fabs(weight - 0.99f) <= 0.005f);
    gtl::judge::expect_equal(r.next<int>(what), static_cast<int>(p.compute), what + ".policy");
    gtl::judge::expect_equal(r.next<bool>(what), scaling,
                             what + ".loss_scaling (rounding to " + p.name() + " zeroes " +
                                 std::to_string(lost) +
                                 " of the Underflow test's gradient-like "
                                 "values that float32 keeps: revisit \"Why gradients underflow\")");
    gtl::judge::expect_equal(r.next<float>(what),
                             scaling ? gtl::optim::LossScalerOptions{}.init_scale : 1.f,
                             what + ".init_scale (the core's scaler's default when there is one)");
    gtl::judge::expect_equal(r.next<bool>(what), masters,
                             what + ".master_weights (a " + p.name() +
                                 " weight of 1 stepped by "
                                 "-1e-4 100 times in its own format ends at " +
                                 gtl::judge::show(weight) +
                                 ", float32's at 0.99: revisit "
                                 "\"Master weights\")");
  }
  const auto want = lab03_test::train_lab_model(PrecisionPolicy::bf16(), nullptr, 60,
                                                lab03_test::StepEnd::ClipAndStep);
  Recorded run("Bf16Training.TracksFloat32WithTheBf16Recipe");
  for (std::size_t i = 0; i < want.size(); ++i)
    gtl::judge::expect_equal(run.next<float>("a loss"), want[i].loss,
                             "the bf16 recipe's loss at step " + std::to_string(i));
  return "every recipe right, the bf16 run the core's";
}

std::string capstone() {
  Recorded r("Capstone.CpuRowPeakIsTheTrainingThreadsOwnOnEveryRun");
  const CapstoneReplay want = replay_capstone_cpu_row(lab03_cases::capstone_options());
  gtl::judge::expect_equal(r.next<int64_t>("peak_bytes"), want.peak, "the CPU row's peak bytes");
  gtl::judge::expect_equal(r.next<float>("accuracy"), want.accuracy, "the CPU row's accuracy");
  gtl::judge::expect_equal(r.next<float>("final_loss"), want.loss, "the CPU row's final loss");
  return "the CPU row equals the replayed training";
}

std::string capstone_gpu() {
  lab03::CapstoneOptions o;
  o.steps = 100;
  o.train_size = 6400;
  o.eval_samples = 500;
  const CapstoneReplay cpu = replay_capstone_cpu_row(o);
  Recorded r("CapstoneGpu.EveryGpuRowTrainsAndLearns");
  float gpu_fp32_loss = 0.f;
  for (int row = 0; row < 4; ++row) {
    const std::string at = "row " + std::to_string(row);
    const bool skipped = r.next<bool>(at);
    const float accuracy = r.next<float>(at), loss = r.next<float>(at);
    r.next<int64_t>(at);
    if (skipped || !(accuracy >= 0.8f)) throw Rejection(at + " was skipped or did not learn");
    if (row == 0) gtl::judge::expect_equal(loss, cpu.loss, "the CPU row's final loss");
    if (row == 1) gpu_fp32_loss = loss;
  }
  if (!(std::fabs(gpu_fp32_loss - cpu.loss) <= 0.05f))
    throw Rejection("the GPU FP32 row ends at loss " + gtl::judge::show(gpu_fp32_loss) +
                    ", the CPU replay at " + gtl::judge::show(cpu.loss));
  return "the rows learn, the CPU row is the replayed training";
}

}  // namespace

int main(int argc, char** argv) {
  return gtl::judge::run(argc, argv,
                         {{"fp16-rounding", fp16_rounding},
                          {"bf16-rounding", bf16_rounding},
                          {"underflow", underflow},
                          {"autocast", autocast},
                          {"activation-memory", activation_memory},
                          {"weight-copy", weight_copy},
                          {"loss-scaler", loss_scaler},
                          {"master-weights", master_weights},
                          {"amp-step-clipping", amp_step_clipping},
                          {"amp-training", amp_training},
                          {"bf16-recipe", bf16_recipe},
                          {"capstone", capstone},
                          {"capstone-gpu", capstone_gpu}});
}
