// Test helper: the lab model trained with a hand-written AMP loop, so a test can plug ONE of your
// pieces in (your loss scaler) and use the core's reference for the rest: float32 flat
// parameters with a half compute copy (nn::ParameterBuffer), AdamW (which rewrites the copy) and
// clip_grad_norm_ after unscale.
#pragma once

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
};

// `steps` AdamW steps (lr 2e-3, batch 64, clip 1) of the lab MLP under `policy`; `scaler` may be
// null (no loss scaling). `finish_with_lab_step`: end each step with your lab03::finish_amp_step
// (TODO 5) instead of the reference sequence (unscale, clip_grad_norm_, step, update).
inline std::vector<LoopStep> train_lab_model(const gtl::nn::PrecisionPolicy& policy,
                                             lab03::GradScaler* scaler, int steps,
                                             bool finish_with_lab_step = false) {
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
    if (finish_with_lab_step && scaler) {
      st.stepped = lab03::finish_amp_step(*scaler, flat, adamw, 1.f).stepped;
    } else {
      const bool overflow = scaler && scaler->unscale_(flat);
      if (!overflow) gtl::optim::clip_grad_norm_(flat, 1.f);
      st.stepped = scaler ? scaler->step(adamw) : (adamw.step(), true);
      if (scaler) scaler->update();
    }
    out.push_back(st);
  }
  return out;
}

}  // namespace lab03_test
