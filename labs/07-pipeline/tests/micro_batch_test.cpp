// TODO 2: micro-batches cover the batch, and their weighted gradients add up to the whole batch's.
#include <gtest/gtest.h>

#include <cmath>
#include <memory>
#include <sstream>

#include "gtl/nn/cross_entropy.h"
#include "gtl/nn/models.h"
#include "gtl/nn/parameter_buffer.h"
#include "gtl/runtime/error.h"
#include "pipeline.h"
#include "pipeline_training.h"

namespace lab07 {
namespace {

namespace nn = gtl::nn;

std::string describe(const std::vector<MicroBatch>& mbs) {
  std::ostringstream s;
  for (const MicroBatch& mb : mbs) s << "[" << mb.begin << ", " << mb.end << ") ";
  return s.str();
}

TEST(MicroBatches, CoverEveryRowOnceInOrderLargerOnesFirst) {
  struct Case {
    int64_t batch, m;
    std::vector<int64_t> sizes;
  };
  for (const Case& c : {Case{12, 4, {3, 3, 3, 3}}, Case{10, 4, {3, 3, 2, 2}}, Case{7, 1, {7}},
                        Case{5, 5, {1, 1, 1, 1, 1}}, Case{11, 3, {4, 4, 3}}}) {
    const std::vector<MicroBatch> mbs = split_micro_batches(c.batch, c.m);
    ASSERT_EQ(mbs.size(), c.sizes.size())
        << "a batch of " << c.batch << " in " << c.m << " micro-batches: got " << describe(mbs);
    int64_t next = 0;
    for (std::size_t i = 0; i < mbs.size(); ++i) {
      EXPECT_EQ(mbs[i].begin, next) << "micro-batch " << i << " must start where " << i - 1
                                    << " ends (contiguous, in order): " << describe(mbs);
      EXPECT_EQ(mbs[i].size(), c.sizes[i])
          << "batch " << c.batch << ", m " << c.m << ": micro-batch " << i << " has "
          << mbs[i].size() << " rows, expected " << c.sizes[i] << " (sizes differ by at most "
          << "one, the larger first; no row dropped): " << describe(mbs);
      next = mbs[i].end;
    }
    EXPECT_EQ(next, c.batch) << "every row of the batch must be in a micro-batch: "
                             << describe(mbs);
  }
}

TEST(MicroBatches, RejectsAnEmptyMicroBatch) {
  EXPECT_THROW(split_micro_batches(3, 4), gtl::Error) << "4 micro-batches of 3 rows: one empty";
  EXPECT_THROW(split_micro_batches(3, 0), gtl::Error) << "0 micro-batches";
}

TEST(MicroBatches, WeightIsTheShareOfTheBatchsRows) {
  EXPECT_FLOAT_EQ(micro_batch_weight({0, 3}, 10), 0.3f) << "3 rows of 10";
  EXPECT_FLOAT_EQ(micro_batch_weight({8, 10}, 10), 0.2f)
      << "2 rows of 10: not 1/m = 0.25 (the micro-batches of 10 rows in 4 are 3, 3, 2, 2)";
}

// The gradient of the whole batch's mean loss, and the same accumulated over micro-batches.
std::vector<float> full_batch_grad(const Batch& batch) {
  auto model = nn::make_model(lab_model());
  nn::ParameterBuffer buffer(*model, gtl::Device::cpu());
  const nn::CrossEntropyLoss head;
  nn::Context ctx, loss_ctx;
  Tensor logits = model->forward(batch.images, ctx);
  head.forward(logits, batch.labels, loss_ctx);
  model->backward(ctx, head.backward(loss_ctx));
  return buffer.grads().to_vector();
}

std::vector<float> accumulated_grad(const Batch& batch, int64_t m) {
  auto model = nn::make_model(lab_model());
  nn::ParameterBuffer buffer(*model, gtl::Device::cpu());
  const nn::CrossEntropyLoss head;
  const int64_t rows = batch.images.size(0);
  const std::vector<MicroBatch> mbs = split_micro_batches(rows, m);
  for (std::size_t i = 0; i < mbs.size(); ++i) {
    nn::Context ctx, loss_ctx;
    Tensor logits = model->forward(batch.images.slice(mbs[i].begin, mbs[i].end), ctx);
    head.forward(logits, batch.labels.slice(mbs[i].begin, mbs[i].end), loss_ctx);
    model->backward(ctx, head.backward(loss_ctx, micro_batch_weight(mbs[i], rows)),
                    i == 0 ? nn::GradMode::Overwrite : nn::GradMode::Accumulate);
  }
  return buffer.grads().to_vector();
}

// Tolerance, relative L2 over the whole gradient: 1e-5. The two computations differ only by float32
// rounding: each row's loss gradient starts from w_i / n_i instead of 1 / N (equal in exact
// arithmetic, rounded differently), and the weight GEMMs sum the rows in other groups. A few
// roundings of 6e-8 each, amplified by cancellation in the sums, measured 2e-7 to 4e-7 here; a
// wrong weight (1/m for 10 rows in 4 micro-batches, or no weight at all) is off by 10% or more.
TEST(MicroBatches, AccumulatedGradientsEqualTheWholeBatchsGradient) {
  for (const auto& [rows, m] : {std::pair<int64_t, int64_t>{12, 4}, {10, 4}, {7, 3}, {5, 5}}) {
    const Batch batch = lab_batch(rows, 17);
    const std::vector<float> full = full_batch_grad(batch);
    const std::vector<float> acc = accumulated_grad(batch, m);
    ASSERT_EQ(acc.size(), full.size());
    double diff2 = 0, norm2 = 0;
    for (std::size_t k = 0; k < full.size(); ++k) {
      const double d = static_cast<double>(acc[k]) - full[k];
      diff2 += d * d;
      norm2 += static_cast<double>(full[k]) * full[k];
    }
    const double relative = std::sqrt(diff2 / norm2);
    EXPECT_LE(relative, 1e-5)
        << rows << " rows in " << m << " micro-batches: the accumulated gradient is " << relative
        << " (relative L2) away from the whole batch's: each micro-batch's mean loss "
        << "must be weighted by its share of the rows (micro_batch_weight), and the first "
        << "backward overwrites, the others accumulate";
  }
}

}  // namespace
}  // namespace lab07
