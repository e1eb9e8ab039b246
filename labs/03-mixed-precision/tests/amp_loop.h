// Test helper: the lab model trained with a hand-written loop, so a test can plug ONE of your
// pieces in (your loss scaler, or your end of an AMP step) and use the core's reference for the
// rest: float32 flat parameters with a half compute copy (nn::ParameterBuffer) and AdamW (which
// rewrites the copy). Where clipping goes in an AMP step is TODO 5's question: a run with a
// loss scaler clips nothing here unless it ends with your finish_amp_step.
#pragma once

#include <cmath>
#include <memory>
#include <vector>

#include "gtl/data/data_loader.h"
#include "gtl/data/synthetic_digits.h"
#include "gtl/nn/cross_entropy.h"
#include "gtl/nn/parameter_buffer.h"
#include "gtl/optim/adamw.h"
#include "gtl/optim/grad_clip.h"
#include "mixed_precision.h"

namespace lab03_test {

struct LoopStep {
  float loss = 0.f;
  bool stepped = true;
  float scale = 1.f;
  // The global L2 norm of the gradients AdamW is handed (after unscale_, before any clipping);
  // 0 when the step ends with your finish_amp_step.
  double grad_norm = 0.0;
};

// The global L2 norm of `p`'s gradient (for the loop's record).
inline double grad_norm(const gtl::optim::ParamRef& p) {
  double sum = 0.0;
  for (float g : p.grad.to_vector()) sum += static_cast<double>(g) * static_cast<double>(g);
  return std::sqrt(sum);
}

// How each step of train_lab_model ends, after the backward of loss x scale.
enum class StepEnd {
  ClipAndStep,        // no scaler: clip_grad_norm_ to 1, then AdamW
  Step,               // no clipping: AdamW through the scaler's unscale_, step and update, in the
                      // order the GradScaler interface states (mixed_precision.h); AdamW alone
                      // without a scaler
  YourFinishAmpStep,  // your lab03::finish_amp_step (TODO 5), max_norm 1, with the scaler
};

// `steps` AdamW steps (lr 2e-3, batch 64) of the lab MLP under `policy`; `scaler` may be null (no
// loss scaling, dloss 1).
inline std::vector<LoopStep> train_lab_model(const gtl::nn::PrecisionPolicy& policy,
                                             lab03::GradScaler* scaler, int steps, StepEnd end) {
  GTL_CHECK(end == StepEnd::Step || (end == StepEnd::ClipAndStep) == (scaler == nullptr),
            "train_lab_model: ClipAndStep runs without a scaler, YourFinishAmpStep with one");
  gtl::nn::ModelConfig config;
  auto model = gtl::nn::make_model(config);
  gtl::nn::ParameterBuffer buffer(*model, gtl::Device::cpu());
  if (policy.compute != gtl::DType::Float32) buffer.enable_compute_copy(policy.compute);
  const std::vector<gtl::optim::ParamRef> flat = {buffer.flat_param()};
  gtl::optim::AdamWOptions ao;
  ao.lr = 2e-3f;
  ao.weight_decay = 0.f;
  gtl::optim::AdamW adamw(flat, ao);
  gtl::data::DataLoaderOptions lo;
  lo.batch_size = 64;
  lo.drop_last = true;
  gtl::data::DataLoader loader(std::make_shared<gtl::data::SyntheticDigits>(64 * steps), lo);
  const gtl::nn::CrossEntropyLoss head;
  gtl::nn::PrecisionScope scope(policy);
  std::vector<LoopStep> out;
  for (int s = 0; s < steps; ++s) {
    std::optional<gtl::data::Batch> batch = loader.next();
    batch->wait();
    gtl::nn::Context ctx, loss_ctx;
    LoopStep st;
    st.scale = scaler ? scaler->scale() : 1.f;
    st.loss = head.forward(model->forward(batch->images, ctx), batch->labels, loss_ctx).item();
    model->backward(ctx, head.backward(loss_ctx, st.scale));
    if (end == StepEnd::YourFinishAmpStep) {
      st.stepped = lab03::finish_amp_step(*scaler, flat, adamw, 1.f).stepped;
    } else if (scaler) {
      scaler->unscale_(flat);
      st.grad_norm = grad_norm(flat[0]);
      st.stepped = scaler->step(adamw);
      scaler->update();
    } else {
      st.grad_norm = grad_norm(flat[0]);
      if (end == StepEnd::ClipAndStep) gtl::optim::clip_grad_norm_(flat, 1.f);
      adamw.step();
    }
    out.push_back(st);
  }
  return out;
}

}  // namespace lab03_test
