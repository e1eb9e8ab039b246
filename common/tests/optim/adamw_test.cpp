// AdamW against a reference written in double from PyTorch's definition (torch.optim.AdamW), and
// the difference between decoupled weight decay and Adam with an L2 penalty.
#include "gtl/optim/adamw.h"

#include <cmath>

#include "optim_test_util.h"

namespace gtl::testing {
namespace {

constexpr Tolerance kFloat32Tol{1e-6, 1e-5};

struct Reference {
  std::vector<double> p, m, v;
};

// One Adam step in double; `decoupled` selects AdamW (p *= 1 - lr*wd) or Adam + L2 (g += wd*p).
void reference_step(Reference& r, const std::vector<double>& grad, const optim::AdamWOptions& o,
                    int t, bool decoupled) {
  const double b1 = o.beta1, b2 = o.beta2, lr = o.lr, wd = o.weight_decay;
  for (std::size_t i = 0; i < grad.size(); ++i) {
    double g = grad[i];
    if (decoupled) {
      r.p[i] *= 1.0 - lr * wd;
    } else {
      g += wd * r.p[i];
    }
    r.m[i] = b1 * r.m[i] + (1 - b1) * g;
    r.v[i] = b2 * r.v[i] + (1 - b2) * g * g;
    const double m_hat = r.m[i] / (1 - std::pow(b1, t));
    const double v_hat = r.v[i] / (1 - std::pow(b2, t));
    r.p[i] -= lr * m_hat / (std::sqrt(v_hat) + o.eps);
  }
}

TEST(AdamW, MatchesReference) {
  const optim::AdamWOptions o{1e-2f, 0.9f, 0.999f, 1e-8f, 0.1f};
  Generator gen(11);
  auto params = make_params(gen);
  optim::AdamW adamw(params, o);
  std::vector<Reference> ref;
  for (const auto& p : params) {
    const auto n = static_cast<std::size_t>(p.value.numel());
    ref.push_back({to_double(p.value), std::vector<double>(n), std::vector<double>(n)});
  }
  constexpr int kSteps = 5;
  for (int t = 1; t <= kSteps; ++t) {
    fill_grads(params, gen);
    for (std::size_t k = 0; k < params.size(); ++k)
      reference_step(ref[k], to_double(params[k].grad), o, t, true);
    adamw.step();
  }
  for (std::size_t k = 0; k < params.size(); ++k) {
    const std::string err = compare(params[k].value.to_vector(), to_float(ref[k].p), kFloat32Tol);
    EXPECT_TRUE(err.empty()) << "AdamW parameter " << params[k].name << " after " << kSteps
                             << " steps differs from the reference (check the bias corrections "
                             << "and that eps is added outside the sqrt): " << err;
    const std::string err_v =
        compare(adamw.state()[2 * k + 1].second.to_vector(), to_float(ref[k].v), kFloat32Tol);
    EXPECT_TRUE(err_v.empty()) << "second moment v of " << params[k].name << ": " << err_v;
  }
}

// Bias correction makes the first update exactly lr * sign(g) (m_hat / sqrt(v_hat) = g / |g|),
// whatever the size of the gradient.
TEST(AdamW, FirstStepMovesByLearningRate) {
  optim::ParamRef p{Tensor::from_vector({0.f, 0.f, 0.f}, {3}),
                    Tensor::from_vector({1e-3f, -50.f, 2.f}, {3})};
  optim::AdamW adamw({p}, {0.1f, 0.9f, 0.999f, 1e-12f, 0.f});
  adamw.step();
  const std::string err = compare(p.value.to_vector(), {-0.1f, 0.1f, -0.1f}, {1e-6, 1e-5});
  EXPECT_TRUE(err.empty()) << "the first bias-corrected Adam step is lr * sign(g): " << err;
}

// Decoupled decay shrinks a weight whose gradient is zero by exactly (1 - lr*wd) per step; with
// an L2 penalty the decay goes through Adam's normalisation and moves it by ~lr instead.
TEST(AdamW, DecoupledWeightDecayDiffersFromAdamL2) {
  const optim::AdamWOptions o{1e-2f, 0.9f, 0.999f, 1e-8f, 0.1f};
  Generator gen(5);
  auto params = make_params(gen, DType::Float32, Device::cpu(), {1000});
  params[0].value.fill_(2.0);
  optim::AdamW adamw(params, o);
  Reference adamw_ref{to_double(params[0].value), std::vector<double>(1000),
                      std::vector<double>(1000)};
  Reference l2_ref = adamw_ref;
  for (int t = 1; t <= 3; ++t) {
    fill_grads(params, gen);
    const std::vector<double> g = to_double(params[0].grad);
    reference_step(adamw_ref, g, o, t, true);
    reference_step(l2_ref, g, o, t, false);
    adamw.step();
  }
  const std::vector<float> got = params[0].value.to_vector();
  EXPECT_TRUE(compare(got, to_float(adamw_ref.p), kFloat32Tol).empty())
      << "AdamW must follow the decoupled rule p *= 1 - lr*wd";
  EXPECT_FALSE(compare(got, to_float(l2_ref.p), kFloat32Tol).empty())
      << "AdamW gave the same result as Adam with an L2 penalty: the weight decay is coupled "
         "through the gradient instead of applied to the weight";

  optim::ParamRef idle{Tensor::full({1}, 2.0), Tensor::zeros({1})};
  optim::AdamW decay_only({idle}, o);
  decay_only.step();
  EXPECT_TRUE(compare(idle.value.to_vector(), {2.f * (1.f - 1e-3f)}, {0, 1e-7}).empty())
      << "with a zero gradient AdamW only decays: p = 2 * (1 - lr*wd), got " << idle.value.str();
}

TEST(AdamW, StateHasBothMomentsPerParameter) {
  Generator gen(2);
  auto params = make_params(gen);
  optim::AdamW adamw(params);
  const optim::NamedTensors s = adamw.state();
  ASSERT_EQ(s.size(), 2 * params.size());
  EXPECT_EQ(s[0].first, "w1.exp_avg");
  EXPECT_EQ(s[5].first, "w1000.exp_avg_sq");
  EXPECT_EQ(s[5].second.dtype(), DType::Float32);
}

}  // namespace
}  // namespace gtl::testing
