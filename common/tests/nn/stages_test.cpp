// Pipeline stages: make_stage(config, begin, end) builds only layers [begin, end) of the model,
// with bitwise the weights the whole model has, so running the stages one after the other is the
// whole model's forward and backward, bit for bit, and a stage holds only its own parameters.
#include <string>
#include <vector>

#include "gtl/nn/models.h"
#include "gtl_test.h"

using namespace gtl;

namespace {

nn::ModelConfig mlp_config() {
  nn::ModelConfig c;
  c.input = {1, 4, 4};
  c.hidden = 8;
  c.blocks = 3;
  c.classes = 3;
  c.checkpoint_blocks = {1};  // stages must keep per-block checkpointing
  c.seed = 11;
  return c;
}

nn::ModelConfig cnn_config() {
  nn::ModelConfig c;
  c.kind = "cnn";
  c.input = {1, 8, 8};
  c.hidden = 2;
  c.classes = 3;
  c.seed = 12;
  return c;
}

// Bitwise equality of two float tensors (memcmp semantics through the values).
std::string bitwise_diff(const Tensor& actual, const Tensor& expected) {
  if (actual.shape() != expected.shape()) {
    return "shape " + shape_str(actual.shape()) + " vs " + shape_str(expected.shape());
  }
  return gtl::testing::compare(actual.to_vector(), expected.to_vector(), {0, 0});
}

struct Run {
  Tensor y, dx;
  std::vector<nn::ParamRef> params;
};

// Forward and backward through `stages` in order, as a pipeline would (one micro-batch).
Run run_stages(std::vector<std::unique_ptr<nn::Sequential>>& stages, const Tensor& x,
               const Tensor& dy) {
  std::vector<nn::Context> ctx(stages.size());
  Tensor h = x;
  for (std::size_t s = 0; s < stages.size(); ++s) h = stages[s]->forward(h, ctx[s]);
  Run run;
  run.y = h;
  Tensor d = dy;
  for (std::size_t s = stages.size(); s-- > 0;) d = stages[s]->backward(ctx[s], d);
  run.dx = d;
  for (const auto& stage : stages) {
    for (const nn::ParamRef& p : stage->parameters()) run.params.push_back(p);
  }
  return run;
}

void check_split(const nn::ModelConfig& c, const std::vector<int64_t>& bounds,
                 const Shape& x_shape) {
  std::string split;
  for (int64_t b : bounds) split += std::to_string(b) + " ";
  SCOPED_TRACE(c.kind + " split at " + split);
  std::vector<std::unique_ptr<nn::Sequential>> whole;
  whole.push_back(nn::make_model(c));
  std::vector<std::unique_ptr<nn::Sequential>> stages;
  for (std::size_t i = 0; i + 1 < bounds.size(); ++i) {
    stages.push_back(nn::make_stage(c, bounds[i], bounds[i + 1]));
    EXPECT_EQ(static_cast<int64_t>(stages.back()->size()), bounds[i + 1] - bounds[i]);
  }
  // Initial weights: the stages' parameters, concatenated, are the whole model's, name by name.
  const std::vector<nn::ParamRef> expected = whole[0]->parameters();
  std::vector<nn::ParamRef> got;
  for (const auto& s : stages) {
    for (const nn::ParamRef& p : s->parameters()) got.push_back(p);
  }
  ASSERT_EQ(got.size(), expected.size()) << "the stages must hold every parameter exactly once";
  for (std::size_t i = 0; i < got.size(); ++i) {
    EXPECT_EQ(got[i].name, expected[i].name) << "stage layers keep their index in the model";
    const std::string err = bitwise_diff(got[i].value, expected[i].value);
    EXPECT_TRUE(err.empty()) << expected[i].name << ": a stage's initial weight differs from the "
                             << "whole model's (each layer must draw from its own Philox "
                             << "counters): " << err;
  }
  // Forward stage after stage and backward in reverse: bitwise the whole model's.
  Generator gen(13);
  Tensor x = Tensor::normal(x_shape, gen);
  Tensor dy = Tensor::normal({x_shape[0], c.classes}, gen);
  const Run a = run_stages(stages, x, dy), b = run_stages(whole, x, dy);
  EXPECT_EQ(bitwise_diff(a.y, b.y), "") << "the stages' chained forward must equal the model's";
  EXPECT_EQ(bitwise_diff(a.dx, b.dx), "") << "the input gradient through the stages";
  for (std::size_t i = 0; i < a.params.size(); ++i) {
    const std::string err = bitwise_diff(a.params[i].grad, b.params[i].grad);
    EXPECT_TRUE(err.empty()) << b.params[i].name << ": gradient differs through stages: " << err;
  }
}

}  // namespace

TEST(Stages, NumLayersCountsTopLevelLayers) {
  EXPECT_EQ(nn::num_layers(mlp_config()), 3 + 4) << "mlp: Flatten, Linear, blocks, LN, Linear";
  EXPECT_EQ(nn::num_layers(cnn_config()), 8);
  EXPECT_EQ(static_cast<int64_t>(nn::make_model(mlp_config())->size()),
            nn::num_layers(mlp_config()));
}

TEST(Stages, MlpSplitsReproduceTheWholeModelBitwise) {
  for (const std::vector<int64_t>& bounds : std::vector<std::vector<int64_t>>{
           {0, 7}, {0, 3, 7}, {0, 2, 4, 7}, {0, 1, 2, 3, 4, 5, 6, 7}}) {
    check_split(mlp_config(), bounds, {4, 1, 4, 4});
  }
}

TEST(Stages, CnnSplitsReproduceTheWholeModelBitwise) {
  for (const std::vector<int64_t>& bounds :
       std::vector<std::vector<int64_t>>{{0, 3, 8}, {0, 1, 4, 6, 8}, {0, 7, 8}}) {
    check_split(cnn_config(), bounds, {2, 1, 8, 8});
  }
}

// A stage allocates its own layers' parameters and nothing else: value + gradient, float32, for
// exactly the parameters the whole model's layers [begin, end) have.
TEST(Stages, AStageAllocatesOnlyItsOwnParameters) {
  const nn::ModelConfig c = mlp_config();
  auto whole = nn::make_model(c);
  for (auto [begin, end] : std::vector<std::pair<int64_t, int64_t>>{{0, 2}, {2, 5}, {5, 7}}) {
    int64_t layer_params = 0;
    for (int64_t i = begin; i < end; ++i) {
      layer_params += (*whole)[static_cast<std::size_t>(i)].num_parameters();
    }
    AllocatorScope scope(make_cpu_allocator());  // counts exactly this stage's tensors
    std::shared_ptr<Allocator> alloc = current_allocator(Device::cpu());
    auto stage = nn::make_stage(c, begin, end);
    EXPECT_EQ(stage->num_parameters(), layer_params)
        << "stage [" << begin << ", " << end << ") must hold its layers' parameters only";
    EXPECT_EQ(alloc->stats().allocated_bytes,
              layer_params * static_cast<int64_t>(2 * sizeof(float)))
        << "stage [" << begin << ", " << end << "): bytes allocated must be its parameters' "
        << "values and gradients (float32) and nothing for the other layers";
  }
}

TEST(Stages, BadRangesAreClearErrors) {
  EXPECT_THROW(nn::make_stage(mlp_config(), 3, 3), Error);
  EXPECT_THROW(nn::make_stage(mlp_config(), 0, 8), Error);
  EXPECT_THROW(nn::make_stage(mlp_config(), -1, 2), Error);
}
