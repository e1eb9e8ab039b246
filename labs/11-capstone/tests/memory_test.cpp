// TODO 1: the memory model. Two kinds of checks:
//   MemoryAnchor  at dp = tp = pp = 1 the core's GPT runs one training step (forward, loss,
//                 backward, AdamW) on a caching allocator, and every category of your breakdown
//                 must equal what the allocator measured, to the byte: the parameters and
//                 gradients the model allocates, the AdamW state, the bytes the blocks' forward
//                 leaves held (their saved tensors), and the step's peak (the total).
//   MemoryModel   how each category must move with dp, the ZeRO stage, tp, SP, pp, the
//                 micro-batch count and checkpointing: properties of labs 06, 07 and 08 the
//                 handout states. Every breakdown is also recorded, and the judge recomputes each
//                 one exactly from the handout's facts.
#include <gtest/gtest.h>

#include <algorithm>
#include <memory>
#include <random>
#include <vector>

#include "capstone.h"
#include "gtl/memory/caching_allocator.h"
#include "gtl/nn/activation_checkpoint.h"
#include "gtl/nn/cross_entropy.h"
#include "gtl/nn/gpt.h"
#include "gtl/nn/gpt_block.h"
#include "gtl/optim/adamw.h"
#include "gtl/runtime/error.h"
#include "gtl_judge_output.h"
#include "gtl_test_seed.h"
#include "lab11_cases.h"
#include "lab11_core_step.h"

namespace lab11 {
namespace {

using lab11_cases::AnchorCase;
using lab11_cases::SweepCase;
using lab11_core_step::measure_step;
using lab11_core_step::Measured;

std::string describe(const AnchorCase& a) {
  return lab11::describe(a.model) + ", batch " + std::to_string(a.batch) +
         (a.checkpoint ? ", every block checkpointed" : "");
}

Config anchor_config(const AnchorCase& a) {
  Config c;
  c.micro_batch = a.batch;
  c.activation_checkpointing = a.checkpoint;
  return c;
}

void record(gtl::judge::Outputs& out, const MemoryBreakdown& b) {
  out.record(b.stage);
  out.record(b.parameters);
  out.record(b.gradients);
  out.record(b.optimizer);
  out.record(b.activations);
  out.record(b.other);
}

void expect_anchor(const AnchorCase& a, gtl::judge::Outputs& out) {
  const Measured m = measure_step(a);
  const Config c = anchor_config(a);
  const MemoryBreakdown b = stage_memory(a.model, c, 0);
  out.record(stage_parameters(a.model, c, 0));
  record(out, b);
  const std::string where =
      describe(a) + ", " + lab11::describe(c) + " (" + gtl::test_seed::describe() + ")";
  EXPECT_EQ(stage_parameters(a.model, c, 0), m.parameters)
      << where << ": the parameter count differs from the core's GPT's (docs/core.md, "
      << "\"A small GPT\": P counts the tied table once). Revisit stage_parameters.";
  EXPECT_EQ(b.parameters + b.gradients, m.model)
      << where << ": parameters + gradients = " << b.parameters << " + " << b.gradients
      << " bytes, the core allocates " << m.model << " when it builds the GPT. Revisit the "
      << "bytes per parameter of the weights and of the gradients in fp32.";
  EXPECT_EQ(b.optimizer, m.optimizer)
      << where << ": optimizer " << b.optimizer << " bytes, AdamW allocates " << m.optimizer
      << ". Revisit what AdamW keeps per parameter.";
  if (!a.checkpoint) {
    EXPECT_EQ(b.activations, m.blocks)
        << where << ": activations " << b.activations << " bytes, the blocks' forward keeps "
        << m.blocks << ". Revisit what each layer of a block saves (handout, \"Facts\": the "
        << "saved bytes per block) and how many blocks and micro-batches are held.";
  }
  EXPECT_EQ(b.total(), m.peak) << where << ": your total " << b.total()
                               << " bytes, the allocator's peak of the step " << m.peak
                               << " (activations " << b.activations << ", other " << b.other
                               << "). Revisit the peak (handout, \"Facts\": where the step's "
                               << "peak is and what is held there"
                               << (a.checkpoint ? ", and what checkpointing keeps)" : ")");
}

TEST(MemoryAnchor, EveryCategoryEqualsTheCoresAllocatorAtFixedShapes) {
  gtl::judge::Outputs out("MemoryAnchor.EveryCategoryEqualsTheCoresAllocatorAtFixedShapes");
  for (const AnchorCase& a : lab11_cases::fixed_anchor_cases()) expect_anchor(a, out);
}

TEST(MemoryAnchor, EveryCategoryEqualsTheCoresAllocatorAtSeededShapes) {
  const std::string name = "MemoryAnchor.EveryCategoryEqualsTheCoresAllocatorAtSeededShapes";
  gtl::judge::Outputs out(name);
  for (const AnchorCase& a : lab11_cases::seeded_anchor_cases(name)) expect_anchor(a, out);
}

// bf16-mixed: the same step with a bf16 compute copy of each parameter, one micro-batch and two
// (the second accumulates into the gradients): the persistent state (built: the float32 values,
// which are the masters, their gradients and compute copies; AdamW's m and v), the blocks' saved
// bytes and the step's peak.
void expect_bf16_anchor(const AnchorCase& a, int micro_batches, gtl::judge::Outputs& out) {
  const Measured m = measure_step(a, /*bf16=*/true, micro_batches);
  Config c = anchor_config(a);
  c.precision = Precision::Bf16Mixed;
  c.accumulation = micro_batches;
  const MemoryBreakdown b = stage_memory(a.model, c, 0);
  record(out, b);
  const std::string where =
      describe(a) + ", " + lab11::describe(c) + " (" + gtl::test_seed::describe() + ")";
  EXPECT_EQ(b.parameters + b.gradients + b.optimizer, m.model + m.optimizer)
      << where << ": parameters + gradients + optimizer = " << b.parameters << " + " << b.gradients
      << " + " << b.optimizer << " bytes, the core holds " << m.model + m.optimizer
      << " (the GPT with its compute copies, and AdamW). Revisit F3: which copies of the weights "
      << "bf16-mixed keeps, in which dtype, and which category counts each.";
  if (!a.checkpoint) {
    EXPECT_EQ(b.activations, m.blocks)
        << where << ": activations " << b.activations << " bytes, the core's blocks keep "
        << m.blocks << " under bf16. Revisit which saved tensors are in the compute dtype and "
        << "which stay float32 (handout, F4).";
  }
  EXPECT_EQ(b.total(), m.peak) << where << ": your total " << b.total()
                               << " bytes, the allocator's peak of the step " << m.peak
                               << " (activations " << b.activations << ", other " << b.other
                               << "). Revisit F15's bf16 moments"
                               << (micro_batches > 1 ? " of a backward that accumulates" : "")
                               << ": what a bf16 GEMM's backward makes besides its dx.";
}

TEST(MemoryAnchor, Bf16EveryCategoryEqualsTheCoresAllocator) {
  const std::string name = "MemoryAnchor.Bf16EveryCategoryEqualsTheCoresAllocator";
  gtl::judge::Outputs out(name);
  std::vector<AnchorCase> cases = lab11_cases::fixed_anchor_cases();
  for (const AnchorCase& a : lab11_cases::seeded_anchor_cases(name)) cases.push_back(a);
  for (const AnchorCase& a : cases) {
    for (int micro_batches : {1, 2}) expect_bf16_anchor(a, micro_batches, out);
  }
}

// ---- MemoryModel: the parallel dimensions ------------------------------------------------------

std::string where(const ModelSpec& m, const Config& c) {
  return lab11::describe(m) + ", " + lab11::describe(c) + " (" + gtl::test_seed::describe() + ")";
}

// The stages together hold every parameter of one TP rank once, and the tied table twice when
// the pipeline has more than one stage (the last stage keeps its own copy of the head).
TEST(MemoryModel, StagesHoldEachParameterOnceAndTheEmbeddingsOnlyAtTheEnds) {
  const std::string name = "MemoryModel.StagesHoldEachParameterOnceAndTheEmbeddingsOnlyAtTheEnds";
  gtl::judge::Outputs out(name);
  for (const SweepCase& s : lab11_cases::seeded_sweep_cases(name, 40)) {
    Config c = s.config;
    c.tp = 1;
    int64_t sum = 0;
    for (int st = 0; st < c.pp; ++st) {
      const int64_t p = stage_parameters(s.model, c, st);
      out.record(p);
      sum += p;
      if (st > 0 && st < c.pp - 1) {
        Config one = c;
        one.pp = 1;
        const ModelSpec& m = s.model;
        const int64_t ends =
            m.vocab * m.dim + m.context * m.dim + 2 * m.dim + (m.tied_head ? 0 : m.vocab * m.dim);
        EXPECT_EQ(p * c.pp, stage_parameters(m, one, 0) - ends)
            << where(m, c) << ": middle stage " << st << " holds " << p
            << " parameters; it holds blocks only (lab 07: the embeddings live on the first "
            << "stage, the final LayerNorm and head on the last)";
      }
    }
    const int64_t extra = (s.model.tied_head && c.pp > 1) ? s.model.vocab * s.model.dim : 0;
    EXPECT_EQ(sum, gpt_parameter_count(s.model) + extra)
        << where(s.model, c) << ": the stages hold " << sum << " parameters, the GPT has "
        << gpt_parameter_count(s.model)
        << (extra ? " plus the last stage's copy of the tied table" : "")
        << ". Revisit which stage holds the embeddings and the head.";
  }
}

// ZeRO shards a category over the dp ranks: stage 1 the optimizer state, 2 the gradients too,
// 3 the parameters too; ZeRO-1 and -2 keep full buffers padded per unit (under bf16-mixed the
// values' in bf16) and, in float32, a shard of the values beside them (F8).
TEST(MemoryModel, ZeroShardsOptimizerThenGradientsThenParameters) {
  const std::string name = "MemoryModel.ZeroShardsOptimizerThenGradientsThenParameters";
  gtl::judge::Outputs out(name);
  for (const SweepCase& s : lab11_cases::seeded_sweep_cases(name, 30)) {
    Config c = s.config;
    c.dp = std::max(c.dp, 2);
    std::vector<MemoryBreakdown> z;
    for (int stage = 0; stage <= 3; ++stage) {
      c.zero_stage = stage;
      z.push_back(stage_memory(s.model, c, 0));
      record(out, z.back());
    }
    const std::string at = where(s.model, c);
    const int64_t units = s.model.layers / c.pp + 2;  // F8: each block, a tied table, the rest
    EXPECT_GE(z[1].gradients, z[0].gradients)
        << at << ": ZeRO-1 keeps the whole gradient (F8), padded";
    EXPECT_LT(z[1].gradients, z[0].gradients + 4 * c.dp * units)
        << at << ": ZeRO-1's gradients are more than the whole gradient padded per unit (F8)";
    EXPECT_EQ(z[2].parameters, z[1].parameters)
        << at << ": ZeRO-2 shards the gradients, not the values: its parameters are ZeRO-1's";
    if (c.precision == Precision::Fp32) {
      EXPECT_GT(z[1].parameters, z[0].parameters)
          << at << ": in float32 ZeRO-1 keeps the full values AND its shard of them (F8)";
    } else {
      EXPECT_GE(z[1].parameters, z[0].parameters)
          << at << ": under bf16-mixed ZeRO-1's values are the units' bf16 full buffers, padded "
          << "(F8)";
      EXPECT_LT(z[1].parameters, z[0].parameters + 2 * c.dp * units)
          << at << ": under bf16-mixed ZeRO-1's parameters are more than the bf16 copy padded "
          << "per unit: its value shard is the master, counted under optimizer (F8)";
    }
    EXPECT_LT(z[1].optimizer * c.dp / 2, z[0].optimizer)
        << at << ": ZeRO-1's optimizer state " << z[1].optimizer << " bytes, ZeRO-0's "
        << z[0].optimizer << ": it must be about 1/dp of it (lab 06: shards of the state)";
    EXPECT_GE(z[1].optimizer * c.dp, z[0].optimizer)
        << at << ": ZeRO-1's optimizer state x dp is less than the whole state";
    EXPECT_EQ(z[2].optimizer, z[1].optimizer) << at << ": ZeRO-2 changed the optimizer state";
    EXPECT_EQ(z[3].optimizer, z[1].optimizer) << at << ": ZeRO-3 changed the optimizer state";
    EXPECT_EQ(z[3].gradients, z[2].gradients) << at << ": ZeRO-3 changed the gradients";
    for (int st = 1; st <= 3; ++st) {
      EXPECT_EQ(z[st].activations, z[0].activations)
          << at << ": ZeRO-" << st << " changed the activations (it shards model state only)";
    }
  }
}

// Tensor parallelism divides what lab 08's layers cut; without SP the LayerNorms' tensors and the
// gathered GEMM inputs are whole on every rank, with SP the LayerNorm region is divided too.
TEST(MemoryModel, TensorAndSequenceParallelismDivideWhatLab08Divides) {
  const std::string name = "MemoryModel.TensorAndSequenceParallelismDivideWhatLab08Divides";
  gtl::judge::Outputs out(name);
  for (const SweepCase& s : lab11_cases::seeded_sweep_cases(name, 30)) {
    Config c = s.config;
    c.activation_checkpointing = false;
    c.tp = 1;
    c.sequence_parallel = false;
    const MemoryBreakdown one = stage_memory(s.model, c, 0);
    c.sequence_parallel = true;
    const MemoryBreakdown one_sp = stage_memory(s.model, c, 0);
    record(out, one);
    record(out, one_sp);
    EXPECT_EQ(one_sp.activations, one.activations)
        << where(s.model, c) << ": SP on one rank has nothing to divide";
    int k = 0;  // the largest of 4, 3, 2 that divides the heads, the vocabulary and T
    for (int cand : {4, 3, 2}) {
      if (k == 0 && s.model.heads % cand == 0 && s.model.vocab % cand == 0 &&
          s.model.context % cand == 0) {
        k = cand;
      }
    }
    if (k == 0) continue;
    c.tp = k;
    c.sequence_parallel = false;
    const MemoryBreakdown tp = stage_memory(s.model, c, 0);
    c.sequence_parallel = true;
    const MemoryBreakdown sp = stage_memory(s.model, c, 0);
    record(out, tp);
    record(out, sp);
    const std::string at = where(s.model, c);
    EXPECT_GT(tp.activations * k, one.activations)
        << at << ": without SP, TP " << k << " must leave some activations whole on every rank "
        << "(lab 08: the LayerNorms and the gathered GEMM inputs are replicated)";
    EXPECT_LT(tp.activations, one.activations) << at << ": TP must divide some activations";
    EXPECT_LT(sp.activations, tp.activations)
        << at << ": SP must divide the LayerNorm region's activations (lab 08, step 4)";
    EXPECT_GT(sp.activations * k, one.activations)
        << at << ": even with SP lab 08 saves fc1's gathered input whole";
  }
}

// 1F1B (lab 07): stage s holds min(pp - s, m) micro-batches; more micro-batches than stages add
// none; with checkpointing each of them keeps only the blocks' inputs.
TEST(MemoryModel, OneFOneBHoldsAtMostPpMinusSMicroBatches) {
  const std::string name = "MemoryModel.OneFOneBHoldsAtMostPpMinusSMicroBatches";
  gtl::judge::Outputs out(name);
  for (const SweepCase& s : lab11_cases::seeded_sweep_cases(name, 30)) {
    Config c = s.config;
    c.pp = static_cast<int>(std::max<int64_t>(2, std::min<int64_t>(c.pp, s.model.layers)));
    if (s.model.layers % c.pp != 0) c.pp = 1;
    c.accumulation = c.pp;
    const MemoryBreakdown at_p = stage_memory(s.model, c, 0);
    c.accumulation = 4 * c.pp + 3;
    const MemoryBreakdown many = stage_memory(s.model, c, 0);
    record(out, at_p);
    record(out, many);
    EXPECT_EQ(many.activations, at_p.activations)
        << where(s.model, c) << ": stage 0 holds " << many.activations
        << " bytes with m = " << c.accumulation << " but " << at_p.activations
        << " with m = pp: 1F1B holds at most "
        << "pp - s micro-batches whatever m (lab 07)";
    for (int st = 0; st < c.pp; ++st) record(out, stage_memory(s.model, c, st));
    if (c.pp > 1 && !c.activation_checkpointing) {
      const MemoryBreakdown last = stage_memory(s.model, c, c.pp - 1);
      EXPECT_EQ(at_p.activations, c.pp * last.activations)
          << where(s.model, c) << ": stage 0 holds pp micro-batches, the last stage one";
    }
  }
}

// Every breakdown of seeded models and configurations, and the most loaded stage.
TEST(MemoryModel, SeededConfigurationsEveryStage) {
  const std::string name = "MemoryModel.SeededConfigurationsEveryStage";
  gtl::judge::Outputs out(name);
  for (const SweepCase& s : lab11_cases::seeded_sweep_cases(name, 60)) {
    int64_t most = 0;
    for (int st = 0; st < s.config.pp; ++st) {
      const MemoryBreakdown b = stage_memory(s.model, s.config, st);
      record(out, b);
      EXPECT_EQ(b.stage, st);
      EXPECT_GT(b.parameters + b.optimizer, 0) << where(s.model, s.config) << ": stage " << st;
      most = std::max(most, b.total());
    }
    EXPECT_EQ(memory_per_gpu(s.model, s.config).total(), most);
  }
}

TEST(MemoryModel, RefusesWhatLab08AndTheStagesCannotCut) {
  ModelSpec m = lab11_cases::gpt2_small();
  Config c;
  c.tp = 5;  // 12 heads
  EXPECT_THROW(stage_memory(m, c, 0), gtl::Error);
  c.tp = 1;
  c.pp = 5;  // 12 layers
  EXPECT_THROW(stage_memory(m, c, 0), gtl::Error);
  c.pp = 4;
  EXPECT_THROW(stage_memory(m, c, 4), gtl::Error);
}

}  // namespace
}  // namespace lab11
