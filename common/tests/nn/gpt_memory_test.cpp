// The GPT's memory in one training step: the caching allocator's peak of forward, loss,
// backward and an AdamW step equals, to the byte, the formula docs/core.md states term by term
// (weights, gradients, AdamW moments, the batch, every saved activation including attention's
// B*H*T*T probabilities, and the transients live at the step's peak). The step is the
// trainer's (train/trainer.cpp): logits, loss and dlogits stay alive through the backward.
// A layer that saved one more tensor, or kept one more T x T transient, moves the peak by that
// tensor's bytes, and the check fails naming the shape and both candidate peaks.
#include <algorithm>
#include <cmath>
#include <random>

#include "bitwise_diff.h"
#include "gpt_test_util.h"
#include "gtl/memory/caching_allocator.h"
#include "gtl/nn/cross_entropy.h"
#include "gtl/nn/gpt.h"
#include "gtl/optim/adamw.h"
#include "gtl_test.h"

using namespace gtl;

namespace {

struct StepShape {
  int64_t layers, heads, dim, t, batch, vocab;
  bool tie;
  uint64_t seed;
};

std::string describe(const StepShape& s) {
  return "layers " + std::to_string(s.layers) + ", heads " + std::to_string(s.heads) + ", width " +
         std::to_string(s.dim) + ", T " + std::to_string(s.t) + ", B " + std::to_string(s.batch) +
         ", vocab " + std::to_string(s.vocab) + (s.tie ? ", tied head" : ", untied head");
}

// The context (position table rows) is T + 3: the table's size counts, not the T used.
int64_t context_of(const StepShape& s) {
  return s.t + 3;
}

// Parameters: wte V*D, wpe C*D, per block 12D^2 + 13D (ln1 2D, qkv 3D^2 + 3D, proj D^2 + D,
// ln2 2D, fc1 4D^2 + 4D, fc2 4D^2 + D), ln_f 2D, an untied head V*D more.
int64_t parameter_count(const StepShape& s) {
  const int64_t d = s.dim;
  return s.vocab * d + context_of(s) * d + s.layers * (12 * d * d + 13 * d) + 2 * d +
         (s.tie ? 0 : s.vocab * d);
}

// The two candidates for the step's peak, in bytes above all that is held when the last
// block's backward starts (docs/core.md, "Memory of a training step").
struct PeakCandidates {
  int64_t mlp, attention;
};

PeakCandidates candidates(const StepShape& s) {
  const int64_t n = s.batch * s.t, d = s.dim, scores = s.batch * s.heads * s.t * s.t;
  // Last block, fc2's backward: its dx [N, 4D] and the bias gradient [D] while the MLP's
  // saved tensors are all still held.
  const int64_t mlp = 4 * (4 * n * d + d);
  // Last block, qkv's backward: dP and dS (2 B*H*T^2), dmerged, dY per head, dQKV as heads
  // and merged back (1 + 1 + 3 + 3 N*D), qkv's dx (N*D) and bias gradient (3D); by then the
  // MLP's saved 10N*D + 2N and proj's input (N*D) are freed and the MLP's dx (N*D) is held.
  // Net: (2S + 9N*D + 3D) - (10N*D + 2N) - N*D + N*D.
  const int64_t attention = 4 * (2 * scores - n * d - 2 * n + 3 * d);
  return {mlp, attention};
}

int64_t expected_step_peak(const StepShape& s) {
  const int64_t n = s.batch * s.t, d = s.dim, scores = s.batch * s.heads * s.t * s.t;
  // float32 weights, gradients and AdamW's two moments: 16 bytes per parameter.
  const int64_t persistent = 16 * parameter_count(s);
  // The batch: ids [B, T] and targets [B*T], int64.
  const int64_t batch = 8 * n + 8 * n;
  // Saved per block (elements): the block's input and LN1's output (2N*D), LN1's mean and rstd
  // (2N), q/k/v as heads (3N*D), the probabilities (B*H*T^2), the merged heads (N*D), the
  // attention residual x1 and LN2's output (2N*D), LN2's mean and rstd (2N), fc1's output and
  // GELU's output (8N*D): 16N*D + 4N + B*H*T^2.
  const int64_t per_block = 4 * (16 * n * d + 4 * n + scores);
  // At the last block's backward: the head's dx and the block's incoming gradient (2N*D: they
  // replace ln_f's input and output, both freed), the logits and dlogits (2N*V), the loss.
  const int64_t held = 4 * (2 * n * d + 2 * n * s.vocab) + 4;
  const PeakCandidates c = candidates(s);
  return persistent + batch + s.layers * per_block + held + std::max(c.mlp, c.attention);
}

struct StepMemory {
  int64_t peak = 0;
  float loss = 0.f;
  std::vector<std::vector<float>> grads;  // every parameter's, before the AdamW step
};

StepMemory run_step(const StepShape& s, bool checkpoint = false) {
  std::shared_ptr<Allocator> alloc = make_cpu_caching_allocator();
  StepMemory out;
  {
    AllocatorScope scope(alloc);
    nn::GPTConfig c;
    c.vocab = s.vocab;
    c.context = context_of(s);
    c.dim = s.dim;
    c.layers = s.layers;
    c.heads = s.heads;
    c.tie_head = s.tie;
    c.seed = s.seed;
    c.checkpoint = checkpoint;
    nn::GPT gpt(c);
    optim::AdamW adamw(gpt.parameters());
    std::mt19937_64 rng(s.seed);  // the batch: any ids; memory does not depend on them
    std::vector<int64_t> ids, targets;
    for (int64_t i = 0; i < s.batch * s.t; ++i) {
      ids.push_back(static_cast<int64_t>(rng() % static_cast<uint64_t>(s.vocab)));
      targets.push_back(static_cast<int64_t>(rng() % static_cast<uint64_t>(s.vocab)));
    }
    const Tensor in = gtl::testing::ids_tensor(ids, {s.batch, s.t});
    const Tensor tg = gtl::testing::ids_tensor(targets, {s.batch * s.t});
    const nn::CrossEntropyLoss head;
    nn::Context ctx, loss_ctx;
    Tensor logits = gpt.forward(in, ctx);
    Tensor loss = head.forward(logits, tg, loss_ctx);
    Tensor dlogits = head.backward(loss_ctx);
    gpt.backward(ctx, dlogits, nn::GradMode::Overwrite);
    for (const nn::ParamRef& p : gpt.parameters()) out.grads.push_back(p.grad.to_vector());
    adamw.step();
    out.loss = loss.item();
  }
  out.peak = alloc->stats().peak_allocated_bytes;
  return out;
}

void check_step_peak(const StepShape& s, bool attention_bound) {
  const StepMemory m = run_step(s);
  ASSERT_TRUE(std::isfinite(m.loss)) << describe(s) << ": the step's loss is " << m.loss;
  const PeakCandidates c = candidates(s);
  ASSERT_EQ(c.attention > c.mlp, attention_bound)
      << describe(s) << ": the shape was chosen for the other candidate peak (fc2 " << c.mlp
      << " B, attention " << c.attention << " B)";
  EXPECT_EQ(m.peak, expected_step_peak(s))
      << describe(s) << ": the allocator's peak of one training step differs from the formula "
      << "(docs/core.md, \"Memory of a training step\"), by " << m.peak - expected_step_peak(s)
      << " bytes. Candidates above the saved activations: fc2's backward " << c.mlp
      << " B, attention's backward " << c.attention << " B. Revisit which tensors each layer "
      << "saves (ctx.saved) and which temporaries the backward holds at once.";
}

}  // namespace

// Width 8, 2 heads, T 5: H*T < 2D + 1, so the MLP's backward is the peak.
TEST(GptMemory, StepPeakMlpBound) {
  check_step_peak({1, 2, 8, 5, 2, 11, true, 1}, false);
}

// T 13 (prime), 4 heads: H*T > 2D + 1, attention's T x T gradients are the peak.
TEST(GptMemory, StepPeakAttentionBoundUntied) {
  check_step_peak({2, 4, 8, 13, 3, 17, false, 2}, true);
}

// T 1: one position, attention's scores are 1 x 1; three blocks.
TEST(GptMemory, StepPeakSinglePosition) {
  check_step_peak({3, 1, 4, 1, 5, 9, true, 3}, false);
}

// 3 heads of width 4, T 7: the MLP bound again, with two blocks.
TEST(GptMemory, StepPeakTwoBlocks) {
  check_step_peak({2, 3, 12, 7, 3, 13, true, 4}, false);
}

// Every block checkpointed (activation_checkpoint.h): the forward keeps only each block's input
// (N*D); the backward recomputes the last block, whose saved tensors other than that input
// (15N*D + 4N + S) are then held at the same two candidate moments. So the peak drops by
// (L - 1) * 4(15N*D + 4N + S) bytes, and the gradients are bit for bit those without
// checkpointing (the recomputation repeats the same CPU kernels on the same inputs).
TEST(GptMemory, CheckpointingEveryBlockSavesWhatTheFormulaSays) {
  for (const StepShape& s :
       {StepShape{3, 2, 8, 5, 2, 11, true, 5}, StepShape{3, 4, 8, 13, 2, 7, false, 6}}) {
    const StepMemory plain = run_step(s), ckpt = run_step(s, /*checkpoint=*/true);
    const int64_t n = s.batch * s.t, d = s.dim, scores = s.batch * s.heads * s.t * s.t;
    const int64_t saved = (s.layers - 1) * 4 * (15 * n * d + 4 * n + scores);
    EXPECT_EQ(plain.peak, expected_step_peak(s)) << describe(s) << ": without checkpointing";
    EXPECT_EQ(plain.peak - ckpt.peak, saved)
        << describe(s) << ": checkpointing every block lowered the step's peak by "
        << plain.peak - ckpt.peak
        << " bytes, the formula says (L - 1) * 4(15N*D + 4N + S) = " << saved
        << ". Revisit what ActivationCheckpoint keeps and when it recomputes.";
    ASSERT_EQ(plain.grads.size(), ckpt.grads.size());
    for (std::size_t i = 0; i < plain.grads.size(); ++i) {
      EXPECT_EQ(gtl::testing::bitwise_diff(ckpt.grads[i], plain.grads[i]), "")
          << describe(s) << ": parameter " << i << "'s gradient with checkpointing differs from "
          << "the one without: the recomputed forward must repeat the original exactly";
    }
  }
}
