// Every layer's backward against central finite differences, on the CPU.
//
// For a layer y = f(x; W) and a fixed random direction r, the objective L = sum_i r_i y_i has
// dL/dy = r, so backward(r) must return dL/dx and write dL/dW. Each checked element e of x and of
// every parameter is nudged by +-h and L is re-evaluated (summed in double):
//   numeric = (L(e + h) - L(e - h)) / ((e + h) - (e - h))        (the actual float step)
// Central differences have error O(h^2); the forward runs in float32, so L carries rounding
// noise of ~1e-6 that the division by 2h amplifies. h = 1e-2 balances the two.
// Tolerance (stated): |analytic - numeric| <= 1e-4 + 1e-3 |numeric| (measured errors: ~5e-6).
// A wrong backward is off by
// O(1) (a missing term, a transposed product), far outside it.
// Kinks: ReLU and max-pool inputs are kept at least 0.05 away from 0 and from each other, so no
// +-h step crosses a kink.
#include <functional>
#include <numeric>

#include "gtl/nn/activation.h"
#include "gtl/nn/activation_checkpoint.h"
#include "gtl/nn/conv2d.h"
#include "gtl/nn/cross_entropy.h"
#include "gtl/nn/flatten.h"
#include "gtl/nn/layernorm.h"
#include "gtl/nn/linear.h"
#include "gtl/nn/max_pool2d.h"
#include "gtl/nn/models.h"
#include "gtl/nn/residual_mlp.h"
#include "gtl/nn/sequential.h"
#include "gtl_test.h"

using namespace gtl;
using gtl::testing::Tolerance;

namespace {

constexpr double kStep = 1e-2;  // h; the whole-CNN test uses 1e-3 (fewer kink crossings)
constexpr Tolerance kTol{1e-4, 1e-3};
constexpr int64_t kMaxChecks = 48;  // elements checked per tensor (spread over the tensor)

double dot(const Tensor& y, const std::vector<float>& r) {
  const std::vector<float> v = y.to_vector();
  double s = 0;
  for (std::size_t i = 0; i < v.size(); ++i) s += static_cast<double>(v[i]) * r[i];
  return s;
}

// Numeric derivative of `objective` with respect to the chosen elements of `t` (CPU float32).
std::vector<float> numeric_grad(const Tensor& t, const std::vector<int64_t>& idx,
                                const std::function<double()>& objective, double step = kStep) {
  float* p = t.data<float>();
  std::vector<float> out;
  for (int64_t i : idx) {
    const float orig = p[i];
    const float plus = static_cast<float>(orig + step), minus = static_cast<float>(orig - step);
    p[i] = plus;
    const double lp = objective();
    p[i] = minus;
    const double lm = objective();
    p[i] = orig;
    out.push_back(static_cast<float>((lp - lm) / (static_cast<double>(plus) - minus)));
  }
  return out;
}

std::vector<int64_t> spread(int64_t n) {
  std::vector<int64_t> idx;
  const int64_t stride = std::max<int64_t>(1, n / kMaxChecks);
  for (int64_t i = 0; i < n && static_cast<int64_t>(idx.size()) < kMaxChecks; i += stride) {
    idx.push_back(i);
  }
  return idx;
}

std::vector<float> pick(const Tensor& t, const std::vector<int64_t>& idx) {
  const std::vector<float> v = t.to_vector();
  std::vector<float> out;
  for (int64_t i : idx) out.push_back(v[static_cast<std::size_t>(i)]);
  return out;
}

// Checks dL/dx and dL/dW of `layer` at input x for L = sum(r * layer(x)).
void check_layer(nn::Module& layer, const Tensor& x, const std::string& what, double step = kStep) {
  nn::Context ctx;
  Tensor y = layer.forward(x, ctx);
  Generator gen(99);
  const Tensor r_tensor = Tensor::normal(y.shape(), gen);
  const std::vector<float> r = r_tensor.to_vector();
  Tensor dx = layer.backward(ctx, r_tensor);
  ASSERT_EQ(dx.shape(), x.shape()) << what << ": dx must have the input's shape";
  auto objective = [&] {
    nn::Context c;
    return dot(layer.forward(x, c), r);
  };
  std::vector<int64_t> idx = spread(x.numel());
  std::string err =
      gtl::testing::compare(pick(dx, idx), numeric_grad(x, idx, objective, step), kTol);
  EXPECT_TRUE(err.empty()) << what << ": dL/dx disagrees with finite differences (the input "
                           << "gradient of backward): " << err;
  for (const nn::ParamRef& p : layer.parameters()) {
    const Tensor analytic = p.grad.clone();
    idx = spread(p.value.numel());
    err = gtl::testing::compare(pick(analytic, idx), numeric_grad(p.value, idx, objective, step),
                                kTol);
    EXPECT_TRUE(err.empty()) << what << ": dL/d" << p.name << " disagrees with finite "
                             << "differences (the parameter gradient of backward): " << err;
  }
}

// Values spread in [-1, 1] but at least `gap` away from 0 and from each other (kink-free FD).
Tensor distinct_values(const Shape& shape, uint64_t seed, float gap = 0.05f) {
  const int64_t n = shape_numel(shape);
  std::vector<float> v(static_cast<std::size_t>(n));
  Generator gen(seed);
  const std::vector<float> keys = Tensor::uniform({n}, gen).to_vector();
  std::vector<int64_t> order(static_cast<std::size_t>(n));
  std::iota(order.begin(), order.end(), 0);
  std::sort(order.begin(), order.end(), [&](int64_t a, int64_t b) { return keys[a] < keys[b]; });
  for (int64_t i = 0; i < n; ++i) {
    const float value = (static_cast<float>(i) - static_cast<float>(n) / 2.f + 0.5f) * gap;
    v[static_cast<std::size_t>(order[static_cast<std::size_t>(i)])] = value;
  }
  return Tensor::from_vector(v, shape);
}

}  // namespace

TEST(GradCheck, Linear) {
  Generator gen(1);
  nn::Linear layer(5, 4, gen);
  check_layer(layer, Tensor::normal({3, 5}, gen), "Linear");
}

TEST(GradCheck, LinearWithoutBias) {
  Generator gen(2);
  nn::Linear layer(6, 3, gen, /*bias=*/false);
  EXPECT_EQ(layer.parameters().size(), 1u);
  check_layer(layer, Tensor::normal({4, 6}, gen), "Linear (no bias)");
}

TEST(GradCheck, ReLU) {
  nn::ReLU layer;
  check_layer(layer, distinct_values({4, 6}, 3), "ReLU");
}

TEST(GradCheck, GELU) {
  Generator gen(4);
  nn::GELU layer;
  check_layer(layer, Tensor::normal({4, 6}, gen, 0.f, 1.5f), "GELU");
}

TEST(GradCheck, LayerNorm) {
  Generator gen(5);
  nn::LayerNorm layer(8);
  // Non-trivial gamma and beta, so their gradients and the dxhat * gamma path are exercised.
  layer.parameters()[0].value.copy_(Tensor::uniform({8}, gen, 0.5f, 1.5f));
  layer.parameters()[1].value.copy_(Tensor::normal({8}, gen));
  check_layer(layer, Tensor::normal({3, 8}, gen, 0.5f, 2.f), "LayerNorm");
}

TEST(GradCheck, ResidualMLP) {
  Generator gen(6);
  nn::ResidualMLP block(6, gen);
  check_layer(block, Tensor::normal({3, 6}, gen), "ResidualMLP (LN -> fc1 -> GELU -> fc2 + x)");
}

TEST(GradCheck, Conv2dPadded) {
  Generator gen(7);
  nn::Conv2d layer(2, 3, 3, gen, /*stride=*/1, /*padding=*/1);
  check_layer(layer, Tensor::normal({2, 2, 5, 5}, gen), "Conv2d (3x3, padding 1)");
}

TEST(GradCheck, Conv2dStrided) {
  Generator gen(8);
  nn::Conv2d layer(2, 2, 3, gen, /*stride=*/2, /*padding=*/0);
  check_layer(layer, Tensor::normal({2, 2, 7, 7}, gen), "Conv2d (3x3, stride 2)");
}

TEST(GradCheck, MaxPool2d) {
  nn::MaxPool2d layer(2);
  check_layer(layer, distinct_values({2, 2, 4, 6}, 9), "MaxPool2d (2x2)");
}

TEST(GradCheck, Flatten) {
  Generator gen(10);
  nn::Flatten layer;
  check_layer(layer, Tensor::normal({2, 3, 2, 2}, gen), "Flatten");
}

TEST(GradCheck, SmallCnnSequential) {
  nn::ModelConfig c;
  c.kind = "cnn";
  c.input = {1, 8, 8};
  c.hidden = 2;
  c.classes = 3;
  c.seed = 11;
  auto model = nn::make_model(c);
  // Distinct inputs keep the first ReLU/max-pool kinks away from the +-h steps; deeper ones can
  // sit near a kink, so this test uses a 10x smaller h. Every layer passing alone and this
  // failing would point at the wiring (Sequential's order of contexts or gradients).
  check_layer(*model, distinct_values({2, 1, 8, 8}, 12, 0.02f),
              "CNN (Sequential of conv, "
              "relu, pool, flatten, linear)",
              1e-3);
}

TEST(GradCheck, CheckpointedSegment) {
  Generator gen(13);
  auto seq = std::make_unique<nn::Sequential>();
  seq->add(std::make_unique<nn::ResidualMLP>(4, gen));
  seq->add(std::make_unique<nn::ResidualMLP>(4, gen));
  nn::ActivationCheckpoint layer(std::move(seq));
  check_layer(layer, Tensor::normal({3, 4}, gen), "ActivationCheckpoint(2 residual blocks)");
}

// The classifier head: Linear -> cross-entropy (mean over the batch). L is the loss itself.
TEST(GradCheck, ClassifierHeadWithCrossEntropy) {
  Generator gen(14);
  nn::Linear head(6, 5, gen);
  const nn::CrossEntropyLoss ce;
  Tensor x = Tensor::normal({4, 6}, gen);
  Tensor labels = Tensor::from_vector({0, 3, 4, 1}, {4}).to(DType::Int64);
  nn::Context ctx, loss_ctx;
  Tensor logits = head.forward(x, ctx);
  ce.forward(logits, labels, loss_ctx);
  Tensor dx = head.backward(ctx, ce.backward(loss_ctx));
  auto objective = [&] {
    nn::Context c, lc;
    return static_cast<double>(ce.forward(head.forward(x, c), labels, lc).item());
  };
  std::vector<int64_t> idx = spread(x.numel());
  std::string err = gtl::testing::compare(pick(dx, idx), numeric_grad(x, idx, objective), kTol);
  EXPECT_TRUE(err.empty()) << "classifier head: dloss/dx disagrees with finite differences: "
                           << err;
  for (const nn::ParamRef& p : head.parameters()) {
    const Tensor analytic = p.grad.clone();
    idx = spread(p.value.numel());
    err = gtl::testing::compare(pick(analytic, idx), numeric_grad(p.value, idx, objective), kTol);
    EXPECT_TRUE(err.empty()) << "classifier head: dloss/d" << p.name
                             << " disagrees with finite differences: " << err;
  }
}

// Accumulate adds to the gradient, Overwrite replaces it: two accumulated backward passes of the
// same batch give exactly twice one overwritten pass (x2 is exact in floating point).
TEST(GradMode, AccumulateAddsOverwriteReplaces) {
  Generator gen(15);
  nn::ResidualMLP block(4, gen);
  Tensor x = Tensor::normal({3, 4}, gen);
  Tensor dy = Tensor::normal({3, 4}, gen);
  auto run = [&](nn::GradMode mode) {
    nn::Context ctx;
    block.forward(x, ctx);
    block.backward(ctx, dy, mode);
  };
  run(nn::GradMode::Overwrite);
  std::vector<Tensor> once;
  for (const nn::ParamRef& p : block.parameters()) once.push_back(p.grad.clone());
  run(nn::GradMode::Overwrite);
  run(nn::GradMode::Accumulate);
  const auto params = block.parameters();
  for (std::size_t i = 0; i < params.size(); ++i) {
    std::vector<float> twice = once[i].to_vector();
    for (float& v : twice) v *= 2.f;
    const std::string err = gtl::testing::compare(params[i].grad.to_vector(), twice, {0, 0});
    EXPECT_TRUE(err.empty()) << params[i].name << ": Overwrite then Accumulate should give twice "
                             << "the gradient of one pass: " << err;
  }
}
