// Lab 04, TODO 5: activation checkpointing: exact held bytes, identical gradients, and every
// checkpointed module running forward exactly twice.
#include <gtest/gtest.h>

#include <map>

#include "bitwise_diff.h"
#include "gtl_judge_output.h"
#include "lab04_cases.h"
#include "lab04_student_call.h"
#include "memory_lab.h"

namespace {

using gtl::Tensor;

std::vector<std::vector<float>> gradients(const gtl::nn::Module& model) {
  std::vector<std::vector<float>> out;
  for (const gtl::optim::ParamRef& p : model.parameters()) out.push_back(p.grad.to_vector());
  return out;
}

// Bytes the forward holds for backward (logits included), exactly, for a batch of `batch`.
int64_t held_after_forward(gtl::nn::Module& model, const lab04::LabBatch& b) {
  const std::shared_ptr<gtl::Allocator> allocator = gtl::make_cpu_allocator();
  const gtl::AllocatorScope scope(allocator);
  gtl::nn::Context ctx;
  const Tensor logits = model.forward(b.images, ctx);
  return allocator->stats().allocated_bytes;
}

// The policy's length for L blocks by a property its definition (memory_lab.h) implies: a length
// in 1..floor(sqrt(L)), which the shortest least-cost length always is. The judge compares every
// length with the exact policy.
void expect_policy(int64_t blocks, int64_t k, const std::string& where) {
  int64_t root = 0;
  while ((root + 1) * (root + 1) <= blocks) ++root;
  EXPECT_TRUE(k >= 1 && k <= root)
      << "TODO 5b: L = " << blocks << where << ": a segment length in 1..floor(sqrt(L)) = 1.."
      << root << ", got " << k << ". Revisit the cost over the integers and its tie rule "
      << "(memory_lab.h).";
}

TEST(Checkpointing, SqrtPolicyMinimisesTheTextbookCost) {
  const std::map<int64_t, int64_t> expected = {{1, 1},  {2, 1},  {3, 1},  {4, 2},  {5, 2},   {9, 3},
                                               {10, 2}, {12, 3}, {16, 4}, {17, 3}, {100, 10}};
  const auto call = lab04_student_call::todo5b();  // no core checkpoint inside
  gtl::judge::Outputs recorded("Checkpointing.SqrtPolicyMinimisesTheTextbookCost");
  for (const auto& [blocks, k] : expected) {
    const int64_t got = lab04::sqrt_segment_length(blocks);
    recorded.record(got);
    expect_policy(blocks, got, "");
    EXPECT_EQ(got, k) << "TODO 5b: L = " << blocks << ": expected k = " << k << ", got " << got
                      << ". Compare the cost of both lengths over the integers (memory_lab.h).";
  }
}

// The same at block counts drawn from the grading seed (lab04_cases.h), up to 100,000.
TEST(Checkpointing, SqrtPolicyMinimisesTheCostAtSeededBlockCounts) {
  const auto call = lab04_student_call::todo5b();
  const std::string name = "Checkpointing.SqrtPolicyMinimisesTheCostAtSeededBlockCounts";
  gtl::judge::Outputs recorded(name);
  for (int64_t blocks : lab04_cases::seeded_block_counts(name, lab04_cases::kSeededBlockCounts)) {
    const int64_t got = lab04::sqrt_segment_length(blocks);
    recorded.record(got);
    expect_policy(blocks, got, " (" + gtl::test_seed::describe() + ")");
  }
}

TEST(Checkpointing, HeldBytesFollowTheFormulaForEverySegmentLength) {
  lab04::ModelConfig config;
  config.blocks = 6;
  const int64_t batch = 16, D = config.hidden;
  const lab04::LabBatch b = lab04::make_batch(config, batch);
  // The plain model measured at 6 and 5 blocks: one block's saved bytes and the rest's (the head).
  auto plain = gtl::nn::make_model(config);
  lab04::ModelConfig shorter = config;
  shorter.blocks = config.blocks - 1;
  auto plain_shorter = gtl::nn::make_model(shorter);
  const int64_t plain_held = held_after_forward(*plain, b);
  const int64_t block = plain_held - held_after_forward(*plain_shorter, b);
  const int64_t head = plain_held - config.blocks * block;
  ASSERT_GT(block, 4 * batch * D) << "a block saves more than its input";
  ASSERT_GT(head, 0) << "the head and the loss hold bytes";
  gtl::judge::Outputs held("Checkpointing.HeldBytesFollowTheFormulaForEverySegmentLength");
  const auto call = lab04_student_call::todo5a();  // the plain model above, your Checkpoint below
  for (int64_t every : {1, 2, 3, 4, 6}) {
    auto model = lab04::make_checkpointed_model(config, every);
    const int64_t segments = (config.blocks + every - 1) / every;
    held.record(held_after_forward(*model, b));
    EXPECT_EQ(held_after_forward(*model, b), head + segments * 4 * batch * D)
        << "TODO 5a: segments of " << every << " blocks: only each segment's INPUT ("
        << "D floats per sample) stays held, " << segments << " of them, plus the head";
  }
  auto none = lab04::make_checkpointed_model(config, 0);
  EXPECT_EQ(held_after_forward(*none, b), head + config.blocks * block)
      << "TODO 5a: every = 0 is the plain model";
}

TEST(Checkpointing, GradientsAreBitwiseThePlainModels) {
  lab04::ModelConfig config;
  config.blocks = 5;
  const lab04::LabBatch b = lab04::make_batch(config, 16);
  auto plain = gtl::nn::make_model(config);
  const float plain_loss = lab04::forward_backward(*plain, b.images, b.labels);
  gtl::judge::Outputs grads("Checkpointing.GradientsAreBitwiseThePlainModels");
  const auto call = lab04_student_call::todo5a();  // the plain model above, your Checkpoint below
  // Segment lengths written out (not TODO 5b's policy): this check grades TODO 5a alone, whatever
  // TODO 5b returns.
  for (int64_t every : {int64_t(1), int64_t(2), int64_t(3)}) {
    auto model = lab04::make_checkpointed_model(config, every);
    ASSERT_EQ(model->num_parameters(), plain->num_parameters())
        << "TODO 5a: the same layers (make_stage), only grouped";
    const float loss = lab04::forward_backward(*model, b.images, b.labels);
    grads.record(loss);
    for (const auto& g : gradients(*model)) grads.record_digest(g.data(), g.size());
    EXPECT_EQ(loss, plain_loss) << "TODO 5a: the same initial weights as make_model(config)";
    // Recomputation runs the same deterministic ops on the same input: bitwise the same.
    EXPECT_EQ(gradients(*model), gradients(*plain))
        << "TODO 5a: segments of " << every << ": the gradients differ from the plain model's. "
        << "Recomputation runs the same deterministic ops on the same input, so the backward "
        << "of some segment saw other values than the plain forward did: revisit what your "
        << "forward keeps and what its backward runs on";
  }
}

// A checkpointed model's run (lab04_cases.h) against the plain model's, bit for bit; the losses
// and gradients go to the judge, which runs the plain model itself. `after[k]` says what the k-th
// backward was, `lesson[k]` what to revisit when its gradients differ.
void expect_plain_run(const lab04_cases::GradientRun& got, const lab04_cases::GradientRun& want,
                      int64_t every, const std::vector<std::string>& after,
                      const std::vector<std::string>& lesson, gtl::judge::Outputs& recorded) {
  for (float loss : got.losses) recorded.record(loss);
  for (const auto& grads : got.grads)
    for (const auto& g : grads) recorded.record_digest(g.data(), g.size());
  EXPECT_EQ(got.losses, want.losses)
      << "TODO 5a: segments of " << every << ": the same initial weights as make_model(config)";
  ASSERT_EQ(got.grads.size(), want.grads.size());
  for (std::size_t k = 0; k < want.grads.size(); ++k) {
    ASSERT_EQ(got.grads[k].size(), want.grads[k].size()) << "TODO 5a: the same parameters";
    for (std::size_t i = 0; i < want.grads[k].size(); ++i) {
      const std::string diff = gtl::testing::bitwise_diff(got.grads[k][i], want.grads[k][i]);
      EXPECT_EQ(diff, "") << "TODO 5a: segments of " << every << ", after " << after[k]
                          << ": the gradient of parameter " << i << " must be the plain model's "
                          << "bit for bit (" << diff << "). " << lesson[k];
      if (!diff.empty()) break;  // the first parameter that differs says it
    }
  }
}

// A training loop does not zero gradients between steps: the first backward of a step OVERWRITES
// whatever they hold (here 1e3, a previous step's), the next ones ACCUMULATE. Both modes, on the
// checkpointed and the plain model, bit for bit.
TEST(Checkpointing, GradientsOverwriteThenAccumulateLikeThePlainModels) {
  lab04::ModelConfig config;
  config.blocks = 5;
  const lab04::LabBatch b1 = lab04::make_batch(config, lab04_cases::kCheckpointBatch, 1);
  const lab04::LabBatch b2 = lab04::make_batch(config, lab04_cases::kCheckpointBatch, 2);
  auto plain = gtl::nn::make_model(config);
  const lab04_cases::GradientRun want = lab04_cases::overwrite_then_accumulate(*plain, b1, b2);
  gtl::judge::Outputs recorded("Checkpointing.GradientsOverwriteThenAccumulateLikeThePlainModels");
  const auto call = lab04_student_call::todo5a();  // the plain model above, your Checkpoint below
  for (int64_t every : {int64_t(1), int64_t(2), int64_t(3)}) {
    auto model = lab04::make_checkpointed_model(config, every);
    ASSERT_EQ(model->num_parameters(), plain->num_parameters())
        << "TODO 5a: the same layers (make_stage), only grouped";
    expect_plain_run(
        lab04_cases::overwrite_then_accumulate(*model, b1, b2), want, every,
        {"a backward with GradMode::Overwrite into gradients holding 1000 (a previous step's)",
         "a second batch's backward with GradMode::Accumulate on top of the first"},
        {"Overwrite REPLACES what the gradients held (revisit GradMode in the core's Module)",
         "Accumulate ADDS to them (revisit GradMode in the core's Module)"},
        recorded);
  }
}

// Two forwards in flight before their backwards (as a pipeline or gradient accumulation does):
// each backward must give the gradients of its own forward.
TEST(Checkpointing, GradientsOfTwoForwardsInFlightAreThePlainModels) {
  lab04::ModelConfig config;
  config.blocks = 5;
  const lab04::LabBatch b1 = lab04::make_batch(config, lab04_cases::kCheckpointBatch, 1);
  const lab04::LabBatch b2 = lab04::make_batch(config, lab04_cases::kCheckpointBatch, 2);
  auto plain = gtl::nn::make_model(config);
  const lab04_cases::GradientRun want = lab04_cases::two_forwards_in_flight(*plain, b1, b2);
  gtl::judge::Outputs recorded("Checkpointing.GradientsOfTwoForwardsInFlightAreThePlainModels");
  const auto call = lab04_student_call::todo5a();  // the plain model above, your Checkpoint below
  for (int64_t every : {int64_t(1), int64_t(2), int64_t(3)}) {
    auto model = lab04::make_checkpointed_model(config, every);
    ASSERT_EQ(model->num_parameters(), plain->num_parameters())
        << "TODO 5a: the same layers (make_stage), only grouped";
    expect_plain_run(
        lab04_cases::two_forwards_in_flight(*model, b1, b2), want, every,
        {"forward(x1, ctx1), forward(x2, ctx2) and backward(ctx2) with GradMode::Overwrite",
         "forward(x1, ctx1), forward(x2, ctx2), backward(ctx2), then backward(ctx1) with "
         "GradMode::Accumulate"},
        {"backward(ctx2) must give x2's gradients",
         "backward(ctx1) must give x1's gradients, though x2's forward ran after x1's (revisit "
         "what a Context is for)"},
        recorded);
  }
}

TEST(Checkpointing, EachCheckpointedModuleRunsForwardExactlyTwice) {
  lab04::ModelConfig config;
  config.blocks = 4;
  const lab04::LabBatch b = lab04::make_batch(config, 8);
  const auto call = lab04_student_call::todo5a();  // no core checkpoint inside
  auto model = lab04::make_checkpointed_model(config, 2);
  std::map<const gtl::nn::Module*, int> forwards;
  std::map<const gtl::nn::Module*, bool> inside;
  gtl::nn::HookHandle handle = model->add_hooks(
      {[&](gtl::nn::Module& m) { ++forwards[&m]; }, nullptr, nullptr, nullptr, nullptr});
  // Mark every module below a Checkpoint.
  std::function<void(const gtl::nn::Module&, bool)> mark = [&](const gtl::nn::Module& m,
                                                               bool below) {
    inside[&m] = below;
    for (const auto& child : m.children()) mark(*child, below || m.kind() == "checkpoint");
  };
  mark(*model, false);
  lab04::forward_backward(*model, b.images, b.labels);
  gtl::judge::Outputs runs("Checkpointing.EachCheckpointedModuleRunsForwardExactlyTwice");
  int checkpointed = 0;
  for (const auto& [m, below] : inside) {
    runs.record(below), runs.record(forwards[m]);
    EXPECT_EQ(forwards[m], below ? 2 : 1)
        << "TODO 5a: module '" << m->path() << "' (" << m->kind() << ") ran forward " << forwards[m]
        << " times; a module inside a checkpointed segment runs twice (forward, "
        << "then the recomputation in backward), every other module once";
    checkpointed += below;
  }
  EXPECT_GT(checkpointed, 0) << "TODO 5a: the blocks sit inside Checkpoint modules";
}

}  // namespace
