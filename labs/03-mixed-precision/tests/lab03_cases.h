// Inputs and scenarios of lab 03's tests, shared by the tests and the lab's judge
// (judge/lab03_judge.cpp). Each scenario takes the implementation as an argument: the tests run
// it with your code, the judge with the core's reference (gtl::optim::LossScaler, MasterWeights,
// clip_grad_norm_, the core's rounding), on the same inputs drawn from the grading seed, and
// compares what the tests recorded (gtl_judge_output.h). The judge also holds what no test
// prints: the autocast lists (Autocast.* compares with the core's layers and says only how many
// answers differ) and the capstone's training replayed.
#pragma once

#include <cfloat>
#include <cmath>
#include <cstdint>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "gtl/data/synthetic_digits.h"
#include "gtl/memory/allocator.h"
#include "gtl/nn/cross_entropy.h"
#include "gtl/nn/models.h"
#include "gtl/nn/parameter_buffer.h"
#include "gtl/optim/loss_scaler.h"
#include "gtl/optim/sgd.h"
#include "gtl/tensor/half.h"
#include "gtl/train/trainer.h"
#include "gtl_test_seed.h"
#include "mixed_precision.h"

namespace lab03_cases {

using gtl::DType;
using gtl::Tensor;
using gtl::optim::ParamRef;

// ---- TODO 1: rounding and underflow ------------------------------------------------------------
// Every 4099th float32 bit pattern from a start drawn from the seed (all exponents, both signs),
// NaN left out (the NanStaysNan tests check them): what `round` makes of each.
inline uint32_t sweep_start() {
  std::mt19937_64 g = gtl::test_seed::generator("NumberFormats.AgreesWithTheGpuRounding");
  return static_cast<uint32_t>(gtl::test_seed::draw(g, 0, 4098));
}
template <typename Round>
std::vector<uint16_t> rounding_sweep(Round round) {
  std::vector<uint16_t> out;
  for (uint64_t u = sweep_start(); u <= 0xffffffffull; u += 4099) {
    const float x = gtl::bits_float(static_cast<uint32_t>(u));
    if (!std::isnan(x)) out.push_back(round(x));
  }
  return out;
}
// Gradient-like values from 1e-12 to 1e-1 (both signs), some zeros and infinities.
inline std::vector<float> seeded_underflow_values() {
  std::mt19937_64 g = gtl::test_seed::generator("Underflow.SeededValues");
  std::uniform_real_distribution<float> exponent(-12.f, -1.f);
  std::vector<float> v(4000);
  for (float& x : v) x = (g() % 2 ? -1.f : 1.f) * std::pow(10.f, exponent(g));
  for (int i = 0; i < 20; ++i) v[g() % v.size()] = 0.f;
  v[g() % v.size()] = INFINITY;
  return v;
}
// The flat float32 gradient of the lab model (MLP, hidden 64, 2 blocks) on 64 digits, loss scale 1.
inline Tensor lab_model_gradient() {
  gtl::nn::ModelConfig config;
  auto model = gtl::nn::make_model(config);
  gtl::data::SyntheticDigits data(64);
  Tensor images = Tensor::empty({64, 1, 28, 28}), labels = Tensor::empty({64}, DType::Int64);
  std::vector<int64_t> idx(64);
  for (int64_t i = 0; i < 64; ++i) idx[static_cast<std::size_t>(i)] = i;
  data.gather(idx, images.data<float>(), labels.data<int64_t>());
  gtl::nn::Context ctx, loss_ctx;
  const gtl::nn::CrossEntropyLoss head;
  head.forward(model->forward(images, ctx), labels, loss_ctx);
  model->backward(ctx, head.backward(loss_ctx, 1.f));
  std::vector<float> flat;
  for (const auto& p : model->parameters())
    for (float g : p.grad.to_vector()) flat.push_back(g);
  return Tensor::from_vector(flat, {static_cast<int64_t>(flat.size())});
}
// 1e-9 .. 1e-2 log-spaced, a zero, a negative value and +-2^-25, the boundary of the handout's
// table (Underflow.ScaledValuesShowWhatTheLossScalerRescues).
inline std::vector<float> scaler_rescue_values() {
  std::vector<float> v;
  for (int i = 0; i < 700; ++i) v.push_back(std::pow(10.f, -9.f + 0.01f * static_cast<float>(i)));
  v.push_back(0.f);
  v.push_back(-3e-9f);
  v.push_back(0x1p-25f);
  v.push_back(-0x1p-25f);
  return v;
}

// ---- TODO 2: autocast, activation bytes, the weight copy ---------------------------------------
inline const std::vector<lab03::Op>& all_ops() {
  static const std::vector<lab03::Op> ops = {
      lab03::Op::MatMul,       lab03::Op::Conv2d,    lab03::Op::Activation, lab03::Op::Softmax,
      lab03::Op::CrossEntropy, lab03::Op::LayerNorm, lab03::Op::Reduction,  lab03::Op::ResidualAdd};
  return ops;
}
inline std::vector<gtl::nn::PrecisionPolicy> policies() {
  return {gtl::nn::PrecisionPolicy::fp32(), gtl::nn::PrecisionPolicy::bf16(),
          gtl::nn::PrecisionPolicy::fp16()};
}

struct Batch {
  Tensor images, labels;
};
inline Batch digits(int64_t n) {
  gtl::data::SyntheticDigits data(n);
  Batch b{Tensor::empty({n, 1, 28, 28}), Tensor::empty({n}, DType::Int64)};
  std::vector<int64_t> idx(static_cast<std::size_t>(n));
  for (int64_t i = 0; i < n; ++i) idx[static_cast<std::size_t>(i)] = i;
  data.gather(idx, b.images.data<float>(), b.labels.data<int64_t>());
  return b;
}
// `n` samples of `config`'s input shape (uniform values) with labels 0..classes-1.
inline Batch batch_for(const gtl::nn::ModelConfig& config, int64_t n) {
  gtl::Shape shape{n};
  shape.insert(shape.end(), config.input.begin(), config.input.end());
  gtl::Generator g(7);
  std::vector<float> labels(static_cast<std::size_t>(n));
  for (int64_t i = 0; i < n; ++i) labels[static_cast<std::size_t>(i)] = float(i % config.classes);
  return Batch{Tensor::uniform(shape, g, 0.f, 1.f),
               Tensor::from_vector(labels, {n}).to(DType::Int64)};
}
// Which parameters of a `config` model a layer reads through a compute copy (nn::weight_as)
// instead of the float32 value, one flag per parameter in parameters() order, observed so that no
// test states which parameters those are: the core's ParameterBuffer gives every parameter a bf16
// copy, then each copy in turn is overwritten with a value the weights never hold, and a bf16
// forward whose logits change read that copy.
inline std::vector<bool> read_through_compute_copy(const gtl::nn::ModelConfig& config) {
  auto model = gtl::nn::make_model(config);
  gtl::nn::ParameterBuffer buffer(*model, gtl::Device::cpu());
  buffer.enable_compute_copy(DType::BFloat16);
  const Batch b = batch_for(config, 4);
  const auto logits = [&] {
    gtl::nn::PrecisionScope scope(gtl::nn::PrecisionPolicy::bf16());
    gtl::nn::Context ctx;
    return model->forward(b.images, ctx).to(DType::Float32).to_vector();
  };
  const std::vector<float> plain = logits();
  std::vector<bool> read;
  for (const ParamRef& p : model->parameters()) {
    const Tensor kept = p.compute.clone();
    Tensor(p.compute).copy_(Tensor::full(p.compute.shape(), 3.f).to(DType::BFloat16));
    read.push_back(logits() != plain);
    Tensor(p.compute).copy_(kept);
  }
  return read;
}
// The bytes the core's forward and loss save for backward, measured.
inline int64_t measured_saved_bytes(const gtl::nn::ModelConfig& config, int64_t n,
                                    const gtl::nn::PrecisionPolicy& policy) {
  auto model = gtl::nn::make_model(config);
  const Batch b = batch_for(config, n);
  gtl::nn::PrecisionScope scope(policy);
  gtl::nn::Context ctx, loss_ctx;
  const gtl::nn::CrossEntropyLoss head;
  head.forward(model->forward(b.images, ctx), b.labels, loss_ctx);
  return ctx.saved_bytes() + loss_ctx.saved_bytes();
}
// ActivationMemory.PredictedBytesEqualTheSavedContextExactly's batch, drawn from the seed.
inline int64_t seeded_batch() {
  std::mt19937_64 g = gtl::test_seed::generator("ActivationMemory.PredictedBytes");
  return gtl::test_seed::draw(g, 1, 32);
}
// The lab model at widths 64 and 96 with 1 to 3 blocks, then two models drawn from the grading
// seed with another input (1 x H x W, H and W in [3, 40]) and 2 to 40 classes: a prediction that
// knows 784 inputs and 10 classes by heart fails there.
inline std::vector<gtl::nn::ModelConfig> activation_configs() {
  std::vector<gtl::nn::ModelConfig> configs;
  for (int64_t hidden : {64, 96})
    for (int64_t blocks : {1, 2, 3}) {
      gtl::nn::ModelConfig c;
      c.hidden = hidden, c.blocks = blocks;
      configs.push_back(c);
    }
  std::mt19937_64 g = gtl::test_seed::generator("ActivationMemory.SeededModels");
  for (int i = 0; i < 2; ++i) {
    gtl::nn::ModelConfig c;
    c.hidden = gtl::test_seed::draw(g, 8, 128);
    c.blocks = gtl::test_seed::draw(g, 1, 3);
    c.input = {1, gtl::test_seed::draw(g, 3, 40), gtl::test_seed::draw(g, 3, 40)};
    c.classes = gtl::test_seed::draw(g, 2, 40);
    configs.push_back(c);
  }
  return configs;
}
// The models HalfWeightCache is built on: the lab MLP and a small CNN (channels 8, 28 x 28 digits).
inline std::vector<gtl::nn::ModelConfig> cache_configs() {
  gtl::nn::ModelConfig mlp, cnn;
  cnn.kind = "cnn";
  cnn.hidden = 8;
  return {mlp, cnn};
}
// What an optimizer step leaves in the parameters before the copies are refreshed: a distinct
// value in every element, drawn from the grading seed; `step` 1, 2, ... gives each step its own.
inline void write_seeded_values(gtl::nn::Module& model, int step) {
  std::mt19937_64 g = gtl::test_seed::generator("HalfWeightCache.Refresh." + std::to_string(step));
  std::uniform_real_distribution<float> d(-4.f, 4.f);
  for (const auto& p : model.parameters()) {
    std::vector<float> v(static_cast<std::size_t>(p.value.numel()));
    for (float& x : v) x = d(g);
    gtl::Tensor(p.value).copy_(gtl::Tensor::from_vector(v, p.value.shape()));
  }
}

// ---- TODO 3: the loss scaler -------------------------------------------------------------------
// The core's reference scaler behind the lab's interface.
class CoreScaler final : public lab03::GradScaler {
 public:
  explicit CoreScaler(float scale, int64_t growth_interval = 2000)
      : scaler_(options(scale, growth_interval)) {}
  float scale() const override { return scaler_.scale(); }
  bool unscale_(const std::vector<ParamRef>& params) override {
    ++unscales;
    scaler_.unscale_(params);
    return scaler_.found_inf_flag().defined() && scaler_.found_inf_flag().item() != 0.f;
  }
  bool step(gtl::optim::Optimizer& optimizer) override { return scaler_.step(optimizer); }
  void update() override {
    ++updates;
    scaler_.update();
  }
  int unscales = 0, updates = 0;

 private:
  static gtl::optim::LossScalerOptions options(float scale, int64_t growth_interval) {
    gtl::optim::LossScalerOptions o;
    o.init_scale = scale;
    o.growth_interval = growth_interval;
    return o;
  }
  gtl::optim::LossScaler scaler_;
};

// A seeded script of clean and overflowed steps: init scale 2^k, growth interval 2..5.
struct ScalerScript {
  float init_scale = 1.f;
  int64_t growth_interval = 2;
  std::vector<bool> overflow;
};
inline ScalerScript seeded_scaler_script() {
  std::mt19937_64 g = gtl::test_seed::generator("LossScaler.FollowsASeededScript");
  ScalerScript s;
  s.init_scale = std::ldexp(1.f, int(gtl::test_seed::draw(g, 2, 20)));
  s.growth_interval = gtl::test_seed::draw(g, 2, 5);
  for (int i = 0; i < 40; ++i) s.overflow.push_back(gtl::test_seed::draw(g, 0, 3) == 0);
  return s;
}
// After each step: what unscale_ returned, whether it stepped, the scale after update() and the
// parameter's first value (SGD, lr 1, on unscaled gradients 0.5 x scale).
struct ScriptStep {
  bool found = false, stepped = false;
  float scale = 0.f, value = 0.f;
};
inline std::vector<ScriptStep> run_scaler_script(lab03::GradScaler& scaler,
                                                 const ScalerScript& script) {
  ParamRef p{Tensor::zeros({2}), Tensor::zeros({2}), Tensor(), "w"};
  gtl::optim::Sgd sgd({p}, gtl::optim::SgdOptions{1.f, 0.f, 0.f});
  std::vector<ScriptStep> out;
  for (bool overflow : script.overflow) {
    p.grad.data<float>()[0] = 0.5f * scaler.scale();
    p.grad.data<float>()[1] = overflow ? INFINITY : -0.25f * scaler.scale();
    ScriptStep s;
    s.found = scaler.unscale_({p});
    s.stepped = scaler.step(sgd);
    scaler.update();
    s.scale = scaler.scale();
    s.value = p.value.to_vector()[0];
    out.push_back(s);
  }
  return out;
}

// ---- TODO 4: master weights --------------------------------------------------------------------
// Three parameters (fp16, bf16, float32) with values and gradients drawn from the seed.
inline std::vector<ParamRef> seeded_model_params() {
  std::mt19937_64 g = gtl::test_seed::generator("MasterWeights.SeededValues");
  std::uniform_real_distribution<float> value(-8.f, 8.f), grad(-1e-3f, 1e-3f);
  std::vector<ParamRef> params;
  for (auto [dtype, n, name] : {std::tuple{DType::Float16, 37, "a"},
                                {DType::BFloat16, 19, "b"},
                                {DType::Float32, 11, "c"}}) {
    std::vector<float> v(static_cast<std::size_t>(n)), d(static_cast<std::size_t>(n));
    for (auto& x : v) x = value(g);
    for (auto& x : d) x = grad(g);
    params.push_back(ParamRef{Tensor::from_vector(v, {n}).to(dtype),
                              Tensor::from_vector(d, {n}).to(dtype), Tensor(), name});
  }
  return params;
}
// A second backward: new seeded gradients written into the model's own gradient tensors.
inline void write_seeded_model_grads(const std::vector<ParamRef>& model) {
  std::mt19937_64 g = gtl::test_seed::generator("MasterWeights.SecondBackward");
  std::uniform_real_distribution<float> grad(-1e-2f, 1e-2f);
  for (const ParamRef& p : model) {
    std::vector<float> d(static_cast<std::size_t>(p.grad.numel()));
    for (auto& x : d) x = grad(g);
    Tensor(p.grad).copy_(Tensor::from_vector(d, p.grad.shape()).to(p.grad.dtype()));
  }
}
// The seeded "optimizer step" applied to the masters before refresh_model: master += delta.
inline std::vector<float> seeded_master_deltas(std::size_t n) {
  std::mt19937_64 g = gtl::test_seed::generator("MasterWeights.SeededDeltas");
  std::uniform_real_distribution<float> delta(-1e-2f, 1e-2f);
  std::vector<float> d(n);
  for (auto& x : d) x = delta(g);
  return d;
}
// Concatenated float32 values of `tensors` (any dtype, widened).
inline std::vector<float> flat(const std::vector<Tensor>& tensors) {
  std::vector<float> out;
  for (const auto& t : tensors)
    for (float x : t.to(DType::Float32).to_vector()) out.push_back(x);
  return out;
}
inline std::vector<float> flat_values(const std::vector<ParamRef>& params) {
  std::vector<Tensor> t;
  for (const ParamRef& p : params) t.push_back(p.value);
  return flat(t);
}
inline std::vector<float> flat_grads(const std::vector<ParamRef>& params) {
  std::vector<Tensor> t;
  for (const ParamRef& p : params) t.push_back(p.grad);
  return flat(t);
}
// The scenario for MasterWeights (yours: masters(), the core's: params()), two steps: the masters
// built, the gradients widened; a second backward's gradients widened; the masters moved by the
// seeded deltas and the model refreshed. Returns {master values, master grads after the first
// and after the second backward, model values after refresh}.
template <typename Masters, typename Get>
std::vector<std::vector<float>> master_weights_scenario(Get masters_of) {
  const std::vector<ParamRef> model = seeded_model_params();
  const Masters mw(model);
  const std::vector<ParamRef>& masters = masters_of(mw);
  std::vector<std::vector<float>> out;
  out.push_back(flat_values(masters));
  mw.grads_to_master();
  out.push_back(flat_grads(masters));
  write_seeded_model_grads(model);
  mw.grads_to_master();
  out.push_back(flat_grads(masters));
  const std::vector<float> deltas = seeded_master_deltas(out[0].size());
  std::size_t at = 0;
  for (const ParamRef& m : masters) {
    float* v = m.value.template data<float>();
    for (int64_t i = 0; i < m.value.numel(); ++i) v[i] += deltas[at++];
  }
  mw.refresh_model();
  out.push_back(flat_values(model));
  return out;
}

// ---- TODO 5: clipping --------------------------------------------------------------------------
// Three gradients with values drawn from the seed, and the max norm: clipped or not.
inline std::pair<std::vector<ParamRef>, float> seeded_clip_case() {
  std::mt19937_64 g = gtl::test_seed::generator("ClipByGlobalNorm.SeededGradients");
  std::uniform_real_distribution<float> v(-3.f, 3.f);
  std::vector<ParamRef> params;
  for (int64_t n : {5, 17, 3}) {
    std::vector<float> d(static_cast<std::size_t>(n));
    for (auto& x : d) x = v(g);
    params.push_back(ParamRef{Tensor::zeros({n}), Tensor::from_vector(d, {n}), Tensor(), "p"});
  }
  const float max_norm = std::uniform_real_distribution<float>(0.5f, 12.f)(g);
  return {params, max_norm};
}

// ---- TODO 7: the capstone's CPU row ------------------------------------------------------------
inline lab03::CapstoneOptions capstone_options() {
  lab03::CapstoneOptions o;
  o.steps = 20;
  o.train_size = 1280;  // 20 batches of 64: one epoch
  o.eval_samples = 200;
  return o;
}

}  // namespace lab03_cases
