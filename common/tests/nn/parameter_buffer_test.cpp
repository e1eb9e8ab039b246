// The flat parameter and gradient buffers: views alias them, and whole-model operations are one
// call on one tensor.
#include "gtl/nn/parameter_buffer.h"
#include "gtl/nn/models.h"
#include "gtl_test.h"

using namespace gtl;

namespace {
std::unique_ptr<nn::Sequential> small_mlp() {
  nn::ModelConfig c;
  c.input = {1, 4, 4};
  c.hidden = 8;
  c.blocks = 1;
  c.classes = 3;
  return nn::make_model(c);
}
}  // namespace

TEST(ParameterBuffer, ViewsAliasTheFlatBuffers) {
  auto model = small_mlp();
  const std::vector<float> before = model->parameters()[0].value.to_vector();
  nn::ParameterBuffer buffer(*model, Device::cpu());
  const auto params = model->parameters();
  const auto& slots = buffer.slots();
  ASSERT_EQ(slots.size(), params.size());
  // The values were moved in unchanged.
  EXPECT_EQ(params[0].value.to_vector(), before) << "moving into the flat buffer changed a value";
  for (std::size_t i = 0; i < params.size(); ++i) {
    EXPECT_EQ(params[i].value.storage(), buffer.values().storage())
        << params[i].name << " is not a view of the flat parameter buffer";
    EXPECT_EQ(params[i].grad.storage(), buffer.grads().storage())
        << params[i].name << "'s gradient is not a view of the flat gradient buffer";
    EXPECT_EQ(slots[i].offset % 64, 0) << "slots start on 256-byte boundaries";
  }
  // Writing through a layer's view changes the flat tensor ...
  Tensor(params[2].value).fill_(7.0);
  EXPECT_EQ(buffer.values().to_vector()[static_cast<std::size_t>(slots[2].offset)], 7.f)
      << "a write through the layer's parameter did not reach the flat buffer";
  // ... and writing the flat tensor changes the layer's view.
  Tensor(buffer.grads()).fill_(3.0);
  for (float v : params[4].grad.to_vector()) ASSERT_EQ(v, 3.f) << "flat write not seen by view";
  buffer.zero_grad();
  for (const nn::ParamRef& p : params) {
    for (float v : p.grad.to_vector()) ASSERT_EQ(v, 0.f) << p.name << ": zero_grad missed it";
  }
}

// backward writes each layer's gradient through its view: the flat gradient is the
// concatenation, so global operations need no list of tensors.
TEST(ParameterBuffer, BackwardFillsTheFlatGradient) {
  auto model = small_mlp();
  nn::ParameterBuffer buffer(*model, Device::cpu());
  Generator gen(1);
  nn::Context ctx;
  Tensor y = model->forward(Tensor::normal({4, 1, 4, 4}, gen), ctx);
  model->backward(ctx, Tensor::normal(y.shape(), gen));
  const std::vector<float> flat = buffer.grads().to_vector();
  double sum_sq_views = 0, sum_sq_flat = 0;
  for (const nn::ParamRef& p : model->parameters()) {
    for (float v : p.grad.to_vector()) sum_sq_views += static_cast<double>(v) * v;
  }
  for (float v : flat) sum_sq_flat += static_cast<double>(v) * v;
  EXPECT_GT(sum_sq_flat, 0.0);
  EXPECT_EQ(sum_sq_flat, sum_sq_views) << "the padding between slots must stay zero and every "
                                          "gradient must live in the flat buffer";
  const nn::ParamRef flat_param = buffer.flat_param();
  EXPECT_EQ(flat_param.grad.numel(), buffer.grads().numel());
}

TEST(ParameterBuffer, ComputeCopyIsTheRoundedMaster) {
  auto model = small_mlp();
  nn::ParameterBuffer buffer(*model, Device::cpu());
  buffer.enable_compute_copy(DType::BFloat16);
  const auto params = model->parameters();
  for (const nn::ParamRef& p : params) {
    ASSERT_TRUE(p.compute.defined()) << p.name << " has no compute copy";
    EXPECT_EQ(p.compute.storage(), buffer.compute().storage());
    const std::string err = gtl::testing::compare(p.compute.to_vector(),
                                                  p.value.to(DType::BFloat16).to_vector(), {0, 0});
    EXPECT_TRUE(err.empty()) << p.name << ": compute copy != round(master): " << err;
  }
  Tensor(params[0].value).fill_(0.3);
  buffer.refresh_compute();
  EXPECT_EQ(params[0].compute.to_vector()[0], Tensor::full({1}, 0.3, DType::BFloat16).item())
      << "refresh_compute must re-round the masters";
  EXPECT_NE(buffer.memory_report().find("bfloat16 compute copy"), std::string::npos)
      << buffer.memory_report();
}
