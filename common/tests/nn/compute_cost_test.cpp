// Compute costs for a simulated timeline: each module reports the FLOPs and bytes of its OWN work
// for an input shape (containers report zero, their children their own), and a hook can price a
// module as it runs with m.forward_cost(m.last_input_shape()).
#include <map>
#include <string>
#include <vector>

#include "gtl/nn/activation.h"
#include "gtl/nn/activation_checkpoint.h"
#include "gtl/nn/conv2d.h"
#include "gtl/nn/linear.h"
#include "gtl/nn/models.h"
#include "gtl/nn/precision.h"
#include "gtl/nn/residual_mlp.h"
#include "gtl_test.h"

using namespace gtl;

// Linear(6 -> 5) on [3, 6], worked by hand:
//   forward GEMM  2 * rows * in * out = 2 * 3 * 6 * 5 = 180 flops
//   bytes         x 18 + W 30 + y 15 = 63 elements of the compute dtype, + bias 5 floats (20 B)
//   backward      dx = dy W and dW = dy^T x: 2 * 180 = 360 flops;
//                 (dy 15 + W 30 + dx 18) + (dy 15 + x 18 + dW 30) = 126 elements, + db 20 B
TEST(ComputeCost, LinearByHand) {
  Generator gen(1);
  nn::Linear linear(6, 5, gen);
  const Shape x = {3, 6};
  const nn::ComputeCost f = linear.forward_cost(x), b = linear.backward_cost(x);
  EXPECT_EQ(f.flops, 180.0) << "Linear forward flops must be 2 * rows * in * out";
  EXPECT_EQ(f.bytes, 63.0 * 4 + 20) << "Linear forward bytes in float32: x + W + y + bias";
  EXPECT_EQ(b.flops, 360.0) << "Linear backward flops must be exactly twice the forward GEMM's";
  EXPECT_EQ(b.bytes, 126.0 * 4 + 20) << "Linear backward bytes: the dx and dW GEMMs' operands";
  {
    nn::PrecisionScope bf16(nn::PrecisionPolicy::bf16());
    EXPECT_EQ(linear.forward_cost(x).flops, 180.0) << "the precision changes bytes, not flops";
    EXPECT_EQ(linear.forward_cost(x).bytes, 63.0 * 2 + 20)
        << "under bf16 the GEMM operands are 2 bytes each; the bias stays float32";
  }
  // Rows are every leading dimension: [2, 3, 6] is 6 rows.
  EXPECT_EQ(linear.forward_cost({2, 3, 6}).flops, 2.0 * 6 * 6 * 5);
}

// Conv2d(2 -> 4, 3x3, padding 1) on [1, 2, 8, 8]: output [1, 4, 8, 8] = 256 values, each a dot
// product of 2 * 3 * 3 = 18 multiply-adds: 2 * 256 * 18 = 9216 flops; bytes x 128 + W 72 + y 256
// floats + bias 4 floats.
TEST(ComputeCost, Conv2dByHand) {
  Generator gen(2);
  nn::Conv2d conv(2, 4, 3, gen, 1, 1);
  const nn::ComputeCost f = conv.forward_cost({1, 2, 8, 8});
  EXPECT_EQ(f.flops, 9216.0) << "Conv2d flops must be 2 * outputs * (in_channels * k * k)";
  EXPECT_EQ(f.bytes, (128.0 + 72 + 256 + 4) * 4);
  const nn::ComputeCost b = conv.backward_cost({1, 2, 8, 8});
  EXPECT_EQ(b.flops, 2 * f.flops) << "the default backward is twice the forward";
  EXPECT_EQ(b.bytes, 2 * f.bytes);
}

// Containers do no work of their own; the cost of a model is the sum over its modules.
TEST(ComputeCost, ContainersCostNothingLeavesAreLeaves) {
  Generator gen(3);
  nn::Sequential seq;
  seq.add(std::make_unique<nn::Linear>(4, 4, gen));
  nn::ActivationCheckpoint ckpt(std::make_unique<nn::ReLU>());
  for (const nn::Module* m : std::vector<const nn::Module*>{&seq, &ckpt}) {
    const nn::ComputeCost f = m->forward_cost({2, 4}), b = m->backward_cost({2, 4});
    EXPECT_EQ(f.flops, 0.0) << m->kind() << ": a container's own forward flops must be 0";
    EXPECT_EQ(f.bytes, 0.0) << m->kind();
    EXPECT_EQ(b.flops, 0.0) << m->kind();
    EXPECT_EQ(b.bytes, 0.0) << m->kind();
    EXPECT_FALSE(m->is_leaf()) << m->kind() << " has children";
  }
  EXPECT_TRUE(seq[0].is_leaf());
  EXPECT_TRUE(ckpt.segment().is_leaf());
}

// A hook prices every module as it runs: each Linear's entry is 2 * N * in * out, and every
// module's last_input_shape() is the shape it was called with.
TEST(ComputeCost, HookPricesEachModuleFromItsLastInputShape) {
  nn::ModelConfig c;
  c.input = {1, 4, 4};
  c.hidden = 8;
  c.blocks = 1;
  c.classes = 3;
  auto model = nn::make_model(c);
  EXPECT_TRUE(model->last_input_shape().empty()) << "no forward has run yet";
  std::map<std::string, nn::ComputeCost> priced;  // by path
  nn::Hooks hooks;
  hooks.after_forward = [&](nn::Module& m) {
    priced[m.path()] = m.forward_cost(m.last_input_shape());
  };
  nn::HookHandle handle = model->add_hooks(hooks);
  Generator gen(4);
  nn::Context ctx;
  model->forward(Tensor::normal({5, 1, 4, 4}, gen), ctx);
  EXPECT_EQ(model->last_input_shape(), (Shape{5, 1, 4, 4}));
  EXPECT_EQ((*model)[1].last_input_shape(), (Shape{5, 16})) << "the Linear after Flatten";
  // Flatten, Linear 16->8, block (ln, fc1 8->32, gelu, fc2 32->8), LayerNorm, Linear 8->3.
  EXPECT_EQ(priced.at("1").flops, 2.0 * 5 * 16 * 8);
  EXPECT_EQ(priced.at("2.fc1").flops, 2.0 * 5 * 8 * 32);
  EXPECT_EQ(priced.at("2.fc2").flops, 2.0 * 5 * 32 * 8);
  EXPECT_EQ(priced.at("4").flops, 2.0 * 5 * 8 * 3);
  EXPECT_EQ(priced.at("0").flops, 0.0) << "Flatten is a view";
  EXPECT_EQ(priced.at("").flops, 0.0) << "the Sequential itself";
  EXPECT_EQ(priced.at("2").flops, 5.0 * 8) << "the residual block's own work: its addition";
  EXPECT_EQ(priced.at("2.gelu").flops, 9.0 * 5 * 32) << "GELU: 9 flops per element";
  EXPECT_EQ(priced.at("3").flops, 8.0 * 5 * 8) << "LayerNorm: 8 flops per element";
}
