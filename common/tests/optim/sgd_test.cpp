// SGD with momentum against a reference written in double from PyTorch's definition
// (torch.optim.SGD): g += wd*p; buf = momentum*buf + g; p -= lr*(nesterov ? g + momentum*buf :
// buf).
#include "gtl/optim/sgd.h"

#include "optim_test_util.h"

namespace gtl::testing {
namespace {

// float32 optimizer vs double reference after a few steps: rounding only.
constexpr Tolerance kFloat32Tol{1e-6, 1e-5};

// Runs `steps` steps of Sgd and of the double reference on the same gradients, and compares.
void check_against_reference(const optim::SgdOptions& o, int steps) {
  Generator gen(7);
  std::vector<optim::ParamRef> params = make_params(gen);
  optim::Sgd sgd(params, o);
  std::vector<std::vector<double>> p, buf;
  for (const auto& prm : params) {
    p.push_back(to_double(prm.value));
    buf.push_back(std::vector<double>(p.back().size(), 0.0));
  }
  for (int step = 0; step < steps; ++step) {
    fill_grads(params, gen);
    for (std::size_t k = 0; k < params.size(); ++k) {
      const std::vector<double> grad = to_double(params[k].grad);
      for (std::size_t i = 0; i < grad.size(); ++i) {
        double g = grad[i] + double{o.weight_decay} * p[k][i];
        if (o.momentum != 0.f) {
          buf[k][i] = o.momentum * buf[k][i] + g;
          g = o.nesterov ? g + o.momentum * buf[k][i] : buf[k][i];
        }
        p[k][i] -= double{o.lr} * g;
      }
    }
    sgd.step();
  }
  EXPECT_EQ(sgd.step_count(), steps);
  for (std::size_t k = 0; k < params.size(); ++k) {
    const std::string err = compare(params[k].value.to_vector(), to_float(p[k]), kFloat32Tol);
    EXPECT_TRUE(err.empty()) << "SGD parameter " << params[k].name << " after " << steps
                             << " steps (momentum " << o.momentum << ", weight decay "
                             << o.weight_decay << ", nesterov " << o.nesterov
                             << ") differs from the reference update: " << err;
  }
}

TEST(Sgd, PlainMatchesReference) {
  check_against_reference({0.1f, 0.f, 0.f, false}, 4);
}

TEST(Sgd, MomentumAndWeightDecayMatchReference) {
  check_against_reference({0.05f, 0.9f, 0.01f, false}, 5);
}

TEST(Sgd, NesterovMatchesReference) {
  check_against_reference({0.05f, 0.9f, 0.0f, true}, 5);
}

// PyTorch's first step sets buf = g (not momentum * g): the update is exactly p - lr*g, and the
// second step already carries momentum * g.
TEST(Sgd, FirstStepBufferIsTheGradient) {
  optim::ParamRef p{Tensor::from_vector({1.f, -2.f}, {2}), Tensor::from_vector({0.5f, 0.25f}, {2})};
  optim::Sgd sgd({p}, {0.5f, 0.9f, 0.f, false});
  sgd.step();
  EXPECT_TRUE(compare(sgd.state()[0].second.to_vector(), {0.5f, 0.25f}, {0, 0}).empty())
      << "momentum buffer after one step must equal the gradient (PyTorch semantics), got "
      << sgd.state()[0].second.str();
  EXPECT_TRUE(compare(p.value.to_vector(), {0.75f, -2.125f}, {0, 0}).empty())
      << "after one step p = p - lr * g, got " << p.value.str();
  sgd.step();  // buf = 0.9 * g + g = 1.9 g
  EXPECT_TRUE(
      compare(p.value.to_vector(), {0.75f - 0.5f * 0.95f, -2.125f - 0.5f * 0.475f}, {1e-6, 1e-6})
          .empty())
      << "second step must use buf = momentum * g + g, got " << p.value.str();
}

TEST(Sgd, StateNamesAndPlainSgdHasNone) {
  Generator gen(1);
  auto params = make_params(gen);
  EXPECT_TRUE(optim::Sgd(params, {0.1f, 0.f, 0.f, false}).state().empty())
      << "plain SGD keeps no buffers";
  const optim::NamedTensors state = optim::Sgd(params, {0.1f, 0.9f, 0.f, false}).state();
  ASSERT_EQ(state.size(), params.size());
  EXPECT_EQ(state[1].first, "w7.momentum_buffer");
}

TEST(Sgd, RejectsMismatchedGrad) {
  optim::ParamRef p{Tensor::zeros({3}), Tensor::zeros({4})};
  EXPECT_THROW(optim::Sgd({p}, {}), Error) << "a grad of another shape must be refused";
}

}  // namespace
}  // namespace gtl::testing
