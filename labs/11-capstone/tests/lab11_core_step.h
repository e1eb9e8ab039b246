// One training step of the core's GPT at dp = tp = pp = 1 on a caching allocator (forward, loss,
// backward, AdamW, as the trainer runs it: docs/core.md, "Memory of a training step"), and what
// the allocator measured: what the memory model must equal. Shared by the tests (memory_test.cpp)
// and the course's check of the judge's reference (judge/reference_anchor_test.cpp).
#pragma once

#include <algorithm>
#include <memory>
#include <random>
#include <vector>

#include "gtl/memory/caching_allocator.h"
#include "gtl/nn/activation_checkpoint.h"
#include "gtl/nn/cross_entropy.h"
#include "gtl/nn/gpt.h"
#include "gtl/nn/gpt_block.h"
#include "gtl/nn/precision.h"
#include "gtl/optim/adamw.h"
#include "lab11_cases.h"
#include "nn/gpt_test_util.h"

namespace lab11_core_step {

using namespace gtl;
using lab11_cases::AnchorCase;

// What the allocator measured over one training step of the core's GPT.
struct Measured {
  int64_t model = 0;       // allocated by building the GPT: its parameters and gradients
  int64_t optimizer = 0;   // allocated by building AdamW
  int64_t blocks = 0;      // held from the first block's forward to the last one's end
  int64_t peak = 0;        // the step's peak
  int64_t parameters = 0;  // numel of the GPT's parameters (for the count)
};

// bf16: bf16-mixed, each parameter with its bf16 compute copy (F3: the weights the forward
// reads; the float32 values are AdamW's masters), made once the GPT is built (counted in
// `model`). `micro_batches`: the step's forward-backward passes, the first overwriting the
// gradients and the others accumulating into them (as the trainer's accumulation does).
inline Measured measure_step(const AnchorCase& a, bool bf16 = false, int micro_batches = 1) {
  std::shared_ptr<Allocator> alloc = make_cpu_caching_allocator();
  Measured m;
  {
    AllocatorScope scope(alloc);
    nn::PrecisionScope precision(bf16 ? nn::PrecisionPolicy::bf16() : nn::PrecisionPolicy::fp32());
    nn::GPTConfig c;
    c.vocab = a.model.vocab;
    c.context = a.model.context;
    c.dim = a.model.dim;
    c.layers = a.model.layers;
    c.heads = a.model.heads;
    c.tie_head = a.model.tied_head;
    c.checkpoint = a.checkpoint;
    c.seed = a.seed;
    nn::GPT gpt(c);
    if (bf16) nn::add_compute_copies(gpt.parameter_slots(), DType::BFloat16);
    m.model = alloc->stats().allocated_bytes;
    for (const nn::ParamRef& p : gpt.parameters()) m.parameters += p.value.numel();
    optim::AdamW adamw(gpt.parameters());
    m.optimizer = alloc->stats().allocated_bytes - m.model;
    // The blocks' forward: from the first block's start to the last block's end (not the
    // checkpointed recomputation), what stays allocated is what the blocks keep.
    int64_t started = -1, blocks_done = 0;
    nn::Hooks hooks;
    hooks.before_forward = [&](nn::Module& mod) {
      if (dynamic_cast<nn::GPTBlock*>(&mod) && !nn::in_recomputation() && started < 0)
        started = alloc->stats().allocated_bytes;
    };
    hooks.after_forward = [&](nn::Module& mod) {
      if (dynamic_cast<nn::GPTBlock*>(&mod) && !nn::in_recomputation() &&
          ++blocks_done == a.model.layers)
        m.blocks = alloc->stats().allocated_bytes - started;
    };
    nn::HookHandle handle = gpt.add_hooks(hooks);
    const int64_t t = a.model.context, n = a.batch * t;
    std::mt19937_64 rng(a.seed);
    for (int mb = 0; mb < micro_batches; ++mb) {
      std::vector<int64_t> ids, targets;
      for (int64_t i = 0; i < n; ++i) {
        ids.push_back(static_cast<int64_t>(rng() % static_cast<uint64_t>(a.model.vocab)));
        targets.push_back(static_cast<int64_t>(rng() % static_cast<uint64_t>(a.model.vocab)));
      }
      const Tensor in = gtl::testing::ids_tensor(ids, {a.batch, t});
      const Tensor tg = gtl::testing::ids_tensor(targets, {n});
      const nn::CrossEntropyLoss head;
      nn::Context ctx, loss_ctx;
      Tensor logits = gpt.forward(in, ctx);
      Tensor loss = head.forward(logits, tg, loss_ctx);
      Tensor dlogits = head.backward(loss_ctx);
      gpt.backward(ctx, dlogits, mb == 0 ? nn::GradMode::Overwrite : nn::GradMode::Accumulate);
    }
    adamw.step();
  }
  m.peak = alloc->stats().peak_allocated_bytes;
  return m;
}

}  // namespace lab11_core_step
