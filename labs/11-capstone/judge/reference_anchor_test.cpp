// The judge's reference memory model (lab11_reference.h) against the core's allocator: at every
// anchor shape of the tests (fixed, and seeded from the run's seed) each category it gives at
// dp = tp = pp = 1 equals what one training step of the core's GPT allocates, to the byte. So the
// reference the judge holds the students' models to is the core's truth, not a second opinion.
#include <gtest/gtest.h>

#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "gtl/nn/flat_parameter.h"
#include "gtl_test_seed.h"
#include "lab11_cases.h"
#include "lab11_core_step.h"
#include "lab11_proof_cases.h"
#include "lab11_reference.h"

namespace {

using lab11_cases::AnchorCase;

void expect_reference_is_the_core(const AnchorCase& a) {
  const lab11_core_step::Measured m = lab11_core_step::measure_step(a);
  lab11::Config c;
  c.micro_batch = a.batch;
  c.activation_checkpointing = a.checkpoint;
  const lab11::MemoryBreakdown r = lab11_reference::stage_memory(a.model, c, 0);
  const std::string at = lab11::describe(a.model) + ", batch " + std::to_string(a.batch) +
                         (a.checkpoint ? ", checkpointed" : "") + " (" +
                         gtl::test_seed::describe() + ")";
  EXPECT_EQ(lab11_reference::stage_parameters(a.model, c, 0), m.parameters) << at;
  EXPECT_EQ(lab11_reference::stage_parameters(a.model, c, 0), lab11::gpt_parameter_count(a.model))
      << at;
  EXPECT_EQ(r.parameters + r.gradients, m.model) << at;
  EXPECT_EQ(r.optimizer, m.optimizer) << at;
  if (!a.checkpoint) {
    EXPECT_EQ(r.activations, m.blocks) << at;
  }
  EXPECT_EQ(r.total(), m.peak) << at << ": activations " << r.activations << ", other " << r.other;
}

TEST(ReferenceAnchor, EqualsTheCoresAllocatorAtFixedShapes) {
  for (const AnchorCase& a : lab11_cases::fixed_anchor_cases()) expect_reference_is_the_core(a);
}

TEST(ReferenceAnchor, EqualsTheCoresAllocatorAtSeededShapes) {
  for (const AnchorCase& a : lab11_cases::seeded_anchor_cases(
           "MemoryAnchor.EveryCategoryEqualsTheCoresAllocatorAtSeededShapes"))
    expect_reference_is_the_core(a);
}

// bf16-mixed (each parameter with its bf16 compute copy), one micro-batch and two (the second
// accumulating): the persistent state, the blocks' saved bytes and the step's peak, at every
// anchor shape.
void expect_bf16_step(const AnchorCase& a, int micro_batches) {
  const lab11_core_step::Measured m =
      lab11_core_step::measure_step(a, /*bf16=*/true, micro_batches);
  lab11::Config c;
  c.micro_batch = a.batch;
  c.activation_checkpointing = a.checkpoint;
  c.precision = lab11::Precision::Bf16Mixed;
  c.accumulation = micro_batches;
  const lab11::MemoryBreakdown r = lab11_reference::stage_memory(a.model, c, 0);
  const std::string at = lab11::describe(a.model) + ", batch " + std::to_string(a.batch) +
                         (a.checkpoint ? ", checkpointed" : "") + ", " +
                         std::to_string(micro_batches) + " micro-batch(es) (" +
                         gtl::test_seed::describe() + ")";
  EXPECT_EQ(r.parameters + r.gradients + r.optimizer, m.model + m.optimizer) << at;
  if (!a.checkpoint) {
    EXPECT_EQ(r.activations, m.blocks) << at;
  }
  EXPECT_EQ(r.total(), m.peak) << at << ": activations " << r.activations << ", other " << r.other;
}

TEST(ReferenceAnchor, Bf16StepEqualsTheCoresAllocator) {
  std::vector<AnchorCase> cases = lab11_cases::fixed_anchor_cases();
  for (const AnchorCase& a :
       lab11_cases::seeded_anchor_cases("MemoryAnchor.Bf16EveryCategoryEqualsTheCoresAllocator"))
    cases.push_back(a);
  for (const AnchorCase& a : cases) {
    for (int micro_batches : {1, 2}) expect_bf16_step(a, micro_batches);
  }
}

}  // namespace

// Beyond one GPU: at the proof's twins (dp x tp x pp, TP up to 4, any ZeRO stage, both
// precisions; fixed, seeded), each stage's total of the reference model equals the share the tests
// derive from the core's GPTStage alone (TP rank 0's; a stage's TP ranks hold alike), which the
// solution's ranks peak at exactly (lab11_proof_test): the facts of stages (F10's copy of a tied
// table, F11's micro-batches in flight, F12 and F13's shards, F15's moments, F16's other on a
// stage that is not the last, F8's ZeRO state, F9's ZeRO-2 and -3 buffers) measured, not assumed.
// The model is DP rank 0's, the most loaded: a later DP rank's last shards may hold padding, which
// AdamW does not update.
//
// Beyond the twins' TP sizes, SP at tp 8 (one stage, both kinds of head; and two stages): there
// the head's backward (its gathered input and its dx whole) outgrows the blocks' moments, which
// no graded twin reaches. And a vocabulary many times the width under bf16, ZeRO-2 and -3, one
// and two stages, both kinds of head: there the loss's backward wins, before the stage's
// backward has made any of F9's buffers.
TEST(ReferenceProof, EveryStageEqualsTheTwinsShare) {
  std::vector<lab11_proof_cases::ProofCase> cases =
      lab11_proof_cases::proof_cases("ReferenceProof.EveryStageEqualsTheTwinsShare");
  for (int i = 0; i < 3; ++i) {
    cases.push_back(lab11_proof_cases::make_case({2, 32, 8, 40, 8, i != 1}, 1, i < 2 ? 1 : 2, 2, 3,
                                                 false, 5, 0, i < 2 ? 8 : 4, true));
  }
  for (int zero : {2, 3}) {
    for (int pp : {1, 2}) {
      cases.push_back(
          lab11_proof_cases::make_case({2, 8, 2, 200, 16, pp == 1}, 2, pp, 2, 2, false, 9, zero));
      cases.back().config.precision = lab11::Precision::Bf16Mixed;
    }
  }
  for (const lab11_proof_cases::ProofCase& c : cases) {
    for (int s = 0; s < c.config.pp; ++s) {
      const int64_t share =
          lab11_proof_cases::stage_share(c, lab11_proof_cases::stage_pieces(c, s, 0), s);
      const lab11::MemoryBreakdown r = lab11_reference::stage_memory(c.model, c.config, s);
      EXPECT_EQ(r.total(), share) << c.name() << ", stage " << s << ": parameters " << r.parameters
                                  << ", gradients " << r.gradients << ", optimizer " << r.optimizer
                                  << ", activations " << r.activations << ", other " << r.other;
    }
  }
}

// Stages in both precisions, at ZeRO-0 (bf16-mixed: a bf16 compute copy of each parameter), TP 1
// to 4 with and without SP, one and two stages, checkpointing, micro-batches of 1 and 2 sequences
// and m = 1 to 3 (F15's bf16 moments: the later backwards accumulate, one of them with a
// micro-batch fewer in flight when m <= pp - s): models bound by attention, by the MLP, and by
// the token table's gradient on stage 0 (a vocabulary many times the width). Each stage's total
// equals the share measured on the core's GPTStage.
TEST(ReferenceStages, BothPrecisionsEqualTheCoresStages) {
  const std::vector<lab11::ModelSpec> models = {{4, 16, 4, 48, 8, true},
                                                {2, 32, 8, 40, 8, false},
                                                {2, 8, 4, 16, 16, true},
                                                {2, 32, 4, 200, 4, false},
                                                {2, 64, 8, 32, 8, true}};
  int stages = 0;
  for (const lab11::ModelSpec& model : models) {
    for (int tp : {1, 2, 4}) {
      for (bool sp : {false, true}) {
        if ((sp && (tp == 1 || model.context % tp != 0)) || model.heads % tp != 0) continue;
        for (int pp : {1, 2}) {
          for (bool checkpoint : {false, true}) {
            for (int64_t m : {1, 2, 3}) {
              for (lab11::Precision precision :
                   {lab11::Precision::Fp32, lab11::Precision::Bf16Mixed}) {
                lab11_proof_cases::ProofCase c = lab11_proof_cases::make_case(
                    model, 1, pp, 1 + (m + pp) % 2, m, checkpoint, 7, 0, tp, sp);
                c.config.precision = precision;
                for (int s = 0; s < pp; ++s) {
                  const int64_t share = lab11_proof_cases::stage_share(
                      c, lab11_proof_cases::stage_pieces(c, s, 0), s);
                  const lab11::MemoryBreakdown r =
                      lab11_reference::stage_memory(c.model, c.config, s);
                  EXPECT_EQ(r.total(), share) << c.name() << ", stage " << s << ": activations "
                                              << r.activations << ", other " << r.other;
                  ++stages;
                }
              }
            }
          }
        }
      }
    }
  }
  EXPECT_GT(stages, 600);
}

// F8 (lab 06's memory table) and F9's persistent part: ZeRO-1, -2 and -3 as lab 06 builds them,
// each of a stage's units (its blocks, a tied table two stages hold, the rest) a core
// FlatParameter over the dp ranks (under bf16-mixed with bf16 full values and float32 master
// shards) with AdamW over this rank's shard. Rank 0's persistent bytes (between steps: ZeRO-2's
// and -3's full gradients released, ZeRO-3's full values too) equal the reference's parameters +
// gradients + optimizer less F9's full buffers of one block and of the stage's other units
// (transients of a pass), to the byte: full values and gradients padded, the values' shard.
TEST(ReferenceZero, ShardsEqualTheCoresFlatParameters) {
  std::mt19937_64 g = gtl::test_seed::generator("ReferenceZero.ShardsEqualTheCoresFlatParameters");
  using gtl::test_seed::draw;
  for (int trial = 0; trial < 12; ++trial) {
    lab11::ModelSpec model;
    lab11::Config c;
    c.pp = static_cast<int>(draw(g, 1, 3));
    model.layers = c.pp * draw(g, 1, 2);
    model.heads = draw(g, 1, 3);
    model.dim = model.heads * 4 * draw(g, 1, 2);
    model.vocab = draw(g, 7, 61);
    model.context = draw(g, 2, 9);
    model.tied_head = draw(g, 0, 1) == 1;
    c.dp = static_cast<int>(draw(g, 2, 7));
    c.zero_stage = static_cast<int>(draw(g, 1, 3));
    if (draw(g, 0, 1) == 1) c.precision = lab11::Precision::Bf16Mixed;
    const bool bf16 = c.precision == lab11::Precision::Bf16Mixed;
    const int s = static_cast<int>(draw(g, 0, c.pp - 1));
    const std::string at = lab11::describe(model) + "; " + lab11::describe(c) + ", stage " +
                           std::to_string(s) + " (" + gtl::test_seed::describe() + ")";

    const std::shared_ptr<gtl::Allocator> alloc = gtl::make_cpu_caching_allocator();
    gtl::AllocatorScope scope(alloc);
    lab11_proof_cases::ProofCase pc;
    pc.model = model;
    pc.config = c;
    gtl::nn::GPTStage stage(lab11_proof_cases::gpt_config(pc), s, c.pp);
    const std::vector<std::unique_ptr<gtl::nn::FlatParameter>> units =
        lab11_proof_cases::zero_units(stage, c.dp, 0, c.zero_stage >= 2,
                                      bf16 ? gtl::DType::BFloat16 : gtl::DType::Float32);
    std::vector<gtl::nn::ParamRef> shards;
    for (const auto& u : units) {
      if (c.zero_stage >= 2) u->release_grads();
      if (c.zero_stage == 3) u->release_values();
      if (const std::optional<gtl::nn::ParamRef> p = u->shard_param()) shards.push_back(*p);
    }
    const gtl::optim::AdamW adamw(shards, gtl::optim::AdamWOptions{});  // m and v, allocated
    const int64_t held = alloc->stats().allocated_bytes;

    const lab11::MemoryBreakdown r = lab11_reference::stage_memory(model, c, s);
    // F9: one block's and the stage's other units' full buffers: gradients (float32), under
    // ZeRO-3 values too (in the compute dtype).
    const int64_t per_element = c.zero_stage == 3 ? 4 + (bf16 ? 2 : 4) : 4;
    int64_t unit_buffers = 0;
    if (c.zero_stage >= 2) {
      unit_buffers = per_element * units.front()->padded_numel();
      for (std::size_t u = static_cast<std::size_t>(model.layers / c.pp); u < units.size(); ++u)
        unit_buffers += per_element * units[u]->padded_numel();
    }
    EXPECT_EQ(r.parameters + r.gradients - unit_buffers + r.optimizer, held)
        << at << ": parameters " << r.parameters << ", gradients " << r.gradients
        << " (the units' full buffers " << unit_buffers << " of them transient), optimizer "
        << r.optimizer;
  }
}
