// clip_grad_norm_ with PyTorch semantics: every gradient *= min(max_norm / (norm + 1e-6), 1).
#include "gtl/optim/grad_clip.h"

#include <cmath>

#include "gtl/ops/global_norm.h"
#include "optim_test_util.h"

namespace gtl::testing {
namespace {

TEST(GradClip, LargeGradientsAreScaledToMaxNorm) {
  Generator gen(31);
  auto params = make_params(gen);
  fill_grads(params, gen, 10.f);
  std::vector<std::vector<double>> before;
  double sum = 0;
  for (const auto& p : params) {
    before.push_back(to_double(p.grad));
    for (double g : before.back()) sum += g * g;
  }
  const double norm = std::sqrt(sum);
  ASSERT_GT(norm, 1.0) << "premise: the gradients are larger than max_norm";
  const Tensor total = optim::clip_grad_norm_(params, 1.f);
  EXPECT_TRUE(compare(total.to_vector(), {static_cast<float>(norm)}, {0, 1e-6}).empty())
      << "clip_grad_norm_ returns the norm before clipping, expected " << norm << ", got "
      << total.item();
  const double coef = 1.0 / (norm + 1e-6);
  for (std::size_t k = 0; k < params.size(); ++k) {
    std::vector<double> expected = before[k];
    for (double& g : expected) g *= coef;
    const std::string err = compare(params[k].grad.to_vector(), to_float(expected), {1e-7, 1e-6});
    EXPECT_TRUE(err.empty()) << params[k].name << ": every gradient is scaled by the same "
                             << "max_norm / (norm + 1e-6): " << err;
  }
  EXPECT_TRUE(
      compare(ops::global_l2_norm(optim::grads_of(params)).to_vector(), {1.f}, {0, 1e-5}).empty())
      << "after clipping the global norm is max_norm";
}

TEST(GradClip, SmallGradientsAreUntouched) {
  Generator gen(32);
  auto params = make_params(gen);
  fill_grads(params, gen, 1e-3f);
  std::vector<Tensor> before;
  for (const auto& p : params) before.push_back(p.grad.clone());
  const float norm = optim::clip_grad_norm_(params, 100.f).item();
  EXPECT_LT(norm, 100.f);
  for (std::size_t k = 0; k < params.size(); ++k)
    expect_bitwise_equal(params[k].grad, before[k], "a norm below max_norm leaves the gradients");
}

TEST(GradClip, WorksOnHalfGradients) {
  optim::ParamRef p{Tensor::zeros({2}, DType::Float16),
                    Tensor::from_vector({300.f, 400.f}, {2}, DType::Float16)};
  const float norm = optim::clip_grad_norm_({p}, 5.f).item();
  EXPECT_TRUE(compare({norm}, {500.f}, {0, 1e-6}).empty()) << "norm of (300, 400) is 500";
  EXPECT_TRUE(compare(p.grad.to_vector(), {3.f, 4.f}, {0, 1e-3}).empty())
      << "clipped to norm 5: (3, 4), got " << p.grad.str();
}

TEST(GradClip, NonFiniteNormsActAsInPyTorch) {
  // An infinite norm gives coef = max_norm / inf = 0: finite gradients become 0, inf * 0 NaN.
  optim::ParamRef inf_grad{Tensor::zeros({3}), Tensor::from_vector({1.f, INFINITY, -2.f}, {3})};
  EXPECT_TRUE(std::isinf(optim::clip_grad_norm_({inf_grad}, 1.f).item()));
  std::string err = compare(inf_grad.grad.to_vector(), {0.f, NAN, 0.f}, {0, 0});
  EXPECT_TRUE(err.empty()) << "an infinite norm multiplies every gradient by 0: " << err;

  // A NaN norm gives a NaN coef, and min(NaN, 1) stays NaN: every gradient becomes NaN.
  optim::ParamRef nan_grad{Tensor::zeros({3}), Tensor::from_vector({1.f, NAN, -2.f}, {3})};
  EXPECT_TRUE(std::isnan(optim::clip_grad_norm_({nan_grad}, 1.f).item()));
  err = compare(nan_grad.grad.to_vector(), {NAN, NAN, NAN}, {0, 0});
  EXPECT_TRUE(err.empty()) << "a NaN norm makes every gradient NaN: " << err;
}

}  // namespace
}  // namespace gtl::testing
