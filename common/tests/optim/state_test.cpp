// Optimizer state round trip: save state() and the step count mid-run, load them into a fresh
// optimizer over parameters restored to the same values, and the run continues bitwise identically.
#include <functional>
#include <memory>

#include "gtl/optim/adamw.h"
#include "gtl/optim/sgd.h"
#include "optim_test_util.h"

namespace gtl::testing {
namespace {

using MakeOptimizer =
    std::function<std::unique_ptr<optim::Optimizer>(const std::vector<optim::ParamRef>&)>;

void check_round_trip(const MakeOptimizer& make, const std::string& what) {
  Generator gen(51);
  auto params = make_params(gen);
  auto opt = make(params);
  for (int i = 0; i < 3; ++i) {
    fill_grads(params, gen);
    opt->step();
  }
  // The checkpoint: copies of the parameters, the optimizer state and the step count.
  std::vector<Tensor> saved_values;
  for (const auto& p : params) saved_values.push_back(p.value.clone());
  optim::NamedTensors saved_state;
  for (const auto& [name, t] : opt->state()) saved_state.emplace_back(name, t.clone());
  const int64_t saved_steps = opt->step_count();
  const uint64_t saved_offset = gen.offset();

  for (int i = 0; i < 3; ++i) {  // the uninterrupted run
    fill_grads(params, gen);
    opt->step();
  }

  Generator other(777);
  auto resumed_params = make_params(other);  // different values, overwritten from the checkpoint
  for (std::size_t k = 0; k < params.size(); ++k) resumed_params[k].value.copy_(saved_values[k]);
  auto resumed = make(resumed_params);
  resumed->load_state(saved_state);
  resumed->set_step_count(saved_steps);
  gen.set_offset(saved_offset);
  for (int i = 0; i < 3; ++i) {
    fill_grads(resumed_params, gen);
    resumed->step();
  }
  for (std::size_t k = 0; k < params.size(); ++k)
    expect_bitwise_equal(resumed_params[k].value, params[k].value, what + " " + params[k].name);
  const auto a = opt->state(), b = resumed->state();
  for (std::size_t i = 0; i < a.size(); ++i)
    expect_bitwise_equal(b[i].second, a[i].second, what + " state " + a[i].first);
}

TEST(OptimizerState, SgdRoundTripIsBitwise) {
  check_round_trip(
      [](const auto& p) {
        return std::make_unique<optim::Sgd>(p, optim::SgdOptions{0.05f, 0.9f, 0.01f, true});
      },
      "Sgd");
}

TEST(OptimizerState, AdamWRoundTripIsBitwise) {
  check_round_trip(
      [](const auto& p) { return std::make_unique<optim::AdamW>(p, optim::AdamWOptions{}); },
      "AdamW");
}

TEST(OptimizerState, LoadStateNamesWhatIsMissing) {
  Generator gen(52);
  auto params = make_params(gen);
  optim::AdamW adamw(params);
  optim::NamedTensors state = adamw.state();
  state[1].first = "nonsense";
  try {
    adamw.load_state(state);
    ADD_FAILURE() << "load_state accepted a state with a wrong name";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("w1.exp_avg_sq"), std::string::npos)
        << "the error must name the missing tensor, got: " << e.what();
  }
}

}  // namespace
}  // namespace gtl::testing
