// Lab 10, TODO 5: the training the tests and the judge both run: kSteps AdamW steps of a case's
// GPT (gpt_cases.h) on `device`, its batches drawn from the case's seed, with `kernels` on every
// block's attention (nullptr: the reference path), in the caller's allocator, stream and
// precision scopes.
#pragma once

#include <algorithm>
#include <memory>
#include <random>
#include <vector>

#include "gpt_cases.h"
#include "gtl/memory/allocator.h"
#include "gtl/nn/attention_kernels.h"
#include "gtl/nn/cross_entropy.h"
#include "gtl/nn/gpt.h"
#include "gtl/nn/parameter_buffer.h"
#include "gtl/optim/adamw.h"
#include "nn/gpt_test_util.h"

namespace lab10_gpt_cases {

struct Steps {
  std::vector<float> losses;                    // one per step
  std::vector<std::vector<float>> first_grads;  // every parameter's, after the first backward
  int64_t held_after_forward = 0;               // `alloc`'s bytes when the first forward returns
};

inline Steps train_steps(const GptCase& c, std::shared_ptr<const gtl::nn::AttentionKernels> kernels,
                         gtl::Device device, gtl::Allocator& alloc) {
  using namespace gtl;
  nn::GPTConfig config;
  config.vocab = c.vocab;
  config.context = c.t;
  config.dim = c.dim;
  config.layers = c.layers;
  config.heads = c.heads;
  config.seed = c.seed;
  nn::GPT gpt(config);
  nn::ParameterBuffer buffer(gpt, device);
  nn::use_attention_kernels(gpt, kernels);
  optim::AdamW adamw(gpt.parameters());
  std::mt19937_64 rng(c.seed);
  Steps out;
  for (int step = 0; step < kSteps; ++step) {
    std::vector<int64_t> ids, targets;
    for (int64_t i = 0; i < c.batch * c.t; ++i) {
      ids.push_back(static_cast<int64_t>(rng() % static_cast<uint64_t>(c.vocab)));
      targets.push_back(static_cast<int64_t>(rng() % static_cast<uint64_t>(c.vocab)));
    }
    const Tensor in = gtl::testing::ids_tensor(ids, {c.batch, c.t}).to(device);
    const Tensor tg = gtl::testing::ids_tensor(targets, {c.batch * c.t}).to(device);
    const nn::CrossEntropyLoss head;
    nn::Context ctx, loss_ctx;
    const Tensor logits = gpt.forward(in, ctx);
    if (step == 0) out.held_after_forward = alloc.stats().allocated_bytes;
    const Tensor loss = head.forward(logits, tg, loss_ctx);
    gpt.backward(ctx, head.backward(loss_ctx), nn::GradMode::Overwrite);
    if (step == 0) {
      for (const nn::ParamRef& p : gpt.parameters())
        out.first_grads.push_back(p.grad.to(Device::cpu()).to_vector());
    }
    adamw.step();
    out.losses.push_back(loss.to(Device::cpu()).item());
  }
  return out;
}

}  // namespace lab10_gpt_cases
