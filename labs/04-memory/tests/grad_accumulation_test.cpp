// Lab 04, TODO 4: gradient accumulation gives the whole batch's gradients with one micro-batch's
// activations.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <limits>

#include "gtl_judge_output.h"
#include "lab04_cases.h"
#include "lab04_student_call.h"
#include "memory_lab.h"

namespace {

// Your accumulate_gradients, inside TODO 4's scope of the reference guard.
float accumulate(gtl::nn::Module& model, const gtl::Tensor& images, const gtl::Tensor& labels,
                 int64_t micro_batches) {
  const auto call = lab04_student_call::todo4();
  return lab04::accumulate_gradients(model, images, labels, micro_batches);
}

using gtl::Tensor;

std::vector<std::vector<float>> gradients(const gtl::nn::Module& model) {
  std::vector<std::vector<float>> out;
  for (const gtl::optim::ParamRef& p : model.parameters()) out.push_back(p.grad.to_vector());
  return out;
}

using lab04_cases::step_peak;

TEST(GradAccumulation, GradientsEqualTheWholeBatchWithinTheDerivedTolerance) {
  lab04::ModelConfig config;
  const lab04::LabBatch b = lab04::make_batch(config, 64);
  auto whole = gtl::nn::make_model(config);
  const float whole_loss = lab04::forward_backward(*whole, b.images, b.labels);
  auto accumulated = gtl::nn::make_model(config);
  accumulated->parameters()[0].grad.fill_(123.f);  // stale gradients from an earlier step
  const float loss = accumulate(*accumulated, b.images, b.labels, 4);
  EXPECT_NEAR(loss, whole_loss, 1e-5f * std::abs(whole_loss))
      << "TODO 4: 64 samples in 4 micro-batches: expected the whole batch's mean loss "
      << whole_loss << ", got " << loss;
  const auto expected = gradients(*whole), got = gradients(*accumulated);
  gtl::judge::Outputs recorded(
      "GradAccumulation.GradientsEqualTheWholeBatchWithinTheDerivedTolerance");
  recorded.record(loss);
  for (const auto& g : got) recorded.record_all(g);
  // Each gradient element is a sum over 64 samples; 4 micro-batches of 16 sum it in another
  // order, and every scaling is a power of two (exact). Float32 reordering
  // of n terms moves the sum by at most n * eps * sum|terms| (the handout derives it); with
  // sum|terms| bounded by 64 * max|element| this gives the bar below, per tensor.
  constexpr float kEps = std::numeric_limits<float>::epsilon();
  for (std::size_t t = 0; t < expected.size(); ++t) {
    float scale = 0.f;
    for (float g : expected[t]) scale = std::max(scale, std::abs(g));
    const float tolerance = 64 * kEps * scale * 4 + 1e-12f;
    for (std::size_t i = 0; i < expected[t].size(); ++i) {
      ASSERT_NEAR(got[t][i], expected[t][i], tolerance)
          << "TODO 4: parameter " << t << " element " << i
          << ": accumulated gradient differs from the whole batch's. Revisit what the whole "
             "batch's mean loss is in terms of the k micro-batch means, and what each "
             "micro-batch's "
             "backward must do to the gradients already there.";
    }
  }
}

// k micro-batches that do not divide the batch of n (parts of sizes differing by one) against one
// forward/backward of the whole batch. The reordering bound of the test above, with n samples,
// plus the parts' scales: each sample's term goes through at most two float32 roundings (a
// third for the whole batch's), at most 3 eps of
// each term more: 4 * (n + 3) * eps * max|g| per tensor (the handout, "Tolerances").
void expect_uneven_parts_give_the_whole_batch(int64_t n, int64_t k, const std::string& test,
                                              const std::string& where) {
  lab04::ModelConfig config;
  const lab04::LabBatch b = lab04::make_batch(config, n);
  auto whole = gtl::nn::make_model(config);
  const float whole_loss = lab04::forward_backward(*whole, b.images, b.labels);
  auto accumulated = gtl::nn::make_model(config);
  accumulated->parameters()[0].grad.fill_(123.f);  // stale gradients from an earlier step
  const float loss = accumulate(*accumulated, b.images, b.labels, k);
  gtl::judge::Outputs recorded(test);
  recorded.record(loss);
  const auto expected = gradients(*whole), got = gradients(*accumulated);
  for (const auto& g : got) recorded.record_all(g);
  EXPECT_NEAR(loss, whole_loss, 1e-5f * std::abs(whole_loss))
      << "TODO 4: " << n << " samples in " << k << " micro-batches" << where << ": expected the "
      << "whole batch's mean loss " << whole_loss << ", got " << loss;
  constexpr float kEps = std::numeric_limits<float>::epsilon();
  ASSERT_EQ(got.size(), expected.size());
  for (std::size_t t = 0; t < expected.size(); ++t) {
    float scale = 0.f;
    for (float g : expected[t]) scale = std::max(scale, std::abs(g));
    const float tolerance = 4 * static_cast<float>(n + 3) * kEps * scale + 1e-12f;
    for (std::size_t i = 0; i < expected[t].size(); ++i) {
      ASSERT_NEAR(got[t][i], expected[t][i], tolerance)
          << "TODO 4: " << n << " samples in " << k << " micro-batches" << where << ", parameter "
          << t << " element " << i
          << ": the accumulated gradient differs from the whole batch's. The parts do not "
             "all hold the same number of samples: revisit what the whole batch's mean loss is "
             "in terms of the parts' means.";
    }
  }
}

TEST(GradAccumulation, GradientsOfUnevenMicroBatchesEqualTheWholeBatch) {
  expect_uneven_parts_give_the_whole_batch(
      66, 4, "GradAccumulation.GradientsOfUnevenMicroBatchesEqualTheWholeBatch", "");
}

// The same at a batch and a k drawn from the grading seed (lab04_cases.h), k not dividing n.
TEST(GradAccumulation, GradientsOfUnevenMicroBatchesAtASeededShape) {
  const std::string name = "GradAccumulation.GradientsOfUnevenMicroBatchesAtASeededShape";
  const lab04_cases::UnevenSplit s = lab04_cases::seeded_uneven_split(name);
  expect_uneven_parts_give_the_whole_batch(s.n, s.k, name, " (" + gtl::test_seed::describe() + ")");
}

TEST(GradAccumulation, OneMicroBatchIsBitwiseThePlainStep) {
  lab04::ModelConfig config;
  const lab04::LabBatch b = lab04::make_batch(config, 32);
  auto plain = gtl::nn::make_model(config);
  lab04::forward_backward(*plain, b.images, b.labels);
  auto one = gtl::nn::make_model(config);
  accumulate(*one, b.images, b.labels, 1);
  gtl::judge::Outputs one_recorded("GradAccumulation.OneMicroBatchIsBitwiseThePlainStep");
  for (const auto& g : gradients(*one)) one_recorded.record_digest(g.data(), g.size());
  EXPECT_EQ(gradients(*one), gradients(*plain))
      << "TODO 4: k = 1 is the plain step: same order, same scale, bitwise the same gradients";
}

TEST(GradAccumulation, PeakHoldsOneMicroBatchOfActivations) {
  lab04::ModelConfig config;
  config.blocks = 4;
  // 130 samples in 4 parts: two of 32 and two of b = 33 (sizes differing by at most one).
  const int64_t n = 130, b = 33, k = 4;
  const std::shared_ptr<gtl::Allocator> allocator = gtl::make_cpu_allocator();
  std::unique_ptr<gtl::nn::Sequential> model;
  lab04::LabBatch whole, micro;
  {
    const gtl::AllocatorScope scope(allocator);
    model = gtl::nn::make_model(config);
    whole = lab04::make_batch(config, n);
    micro = lab04::make_batch(config, b);
  }
  // The largest part's step, as the first (overwrite) and as a later (accumulate) micro-batch.
  const int64_t one = std::max(
      step_peak(allocator, [&] { lab04::forward_backward(*model, micro.images, micro.labels); }),
      step_peak(allocator, [&] {
        lab04::forward_backward(*model, micro.images, micro.labels, 1.f,
                                gtl::nn::GradMode::Accumulate);
      }));
  const int64_t accumulated =
      step_peak(allocator, [&] { accumulate(*model, whole.images, whole.labels, k); });
  gtl::judge::Outputs("GradAccumulation.PeakHoldsOneMicroBatchOfActivations").record(accumulated);
  EXPECT_EQ(accumulated, one) << "TODO 4: " << n << " samples in " << k
                              << " micro-batches must peak at ONE micro-batch of at most " << b
                              << " samples (its activations and backward: " << one
                              << " bytes above the model and batch), got " << accumulated
                              << ". Revisit what each micro-batch holds, for how long, and how "
                                 "many samples the largest part gets.";
}

}  // namespace
