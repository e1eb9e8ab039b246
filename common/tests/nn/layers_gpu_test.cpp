// Each layer's CUDA forward and backward against the CPU (the reference), in float32.
//
// Two copies of a layer are built from the same seed; one is moved to the GPU by its
// ParameterBuffer. Both run forward on the same input and backward on the same dy; outputs,
// input gradients and parameter gradients are compared. Tolerance (float32, TF32 off): cuBLAS and
// cuDNN sum in a different order than OpenBLAS, so |gpu - cpu| <= 1e-4 + 1e-4 |cpu|.
#include <functional>

#include "gtl/nn/activation.h"
#include "gtl/nn/activation_checkpoint.h"
#include "gtl/nn/conv2d.h"
#include "gtl/nn/cross_entropy.h"
#include "gtl/nn/flatten.h"
#include "gtl/nn/layernorm.h"
#include "gtl/nn/linear.h"
#include "gtl/nn/max_pool2d.h"
#include "gtl/nn/models.h"
#include "gtl/nn/parameter_buffer.h"
#include "gtl/nn/precision.h"
#include "gtl/nn/residual_mlp.h"
#include "gtl_test.h"

using namespace gtl;
using gtl::testing::Tolerance;

namespace {

constexpr Tolerance kFp32{1e-4, 1e-4};

using Factory = std::function<std::unique_ptr<nn::Module>()>;

void compare_layer(const Factory& make, const Shape& input_shape, const std::string& what,
                   Tolerance tol = kFp32) {
  auto cpu = make();
  auto gpu = make();
  nn::ParameterBuffer cpu_buffer(*cpu, Device::cpu());
  nn::ParameterBuffer gpu_buffer(*gpu, Device::cuda(0));
  Generator gen(21);
  Tensor x = Tensor::normal(input_shape, gen);
  nn::Context cctx, gctx;
  Tensor ycpu = cpu->forward(x, cctx);
  Tensor ygpu = gpu->forward(x.to(Device::cuda(0)), gctx);
  ASSERT_TRUE(ygpu.is_cuda()) << what << ": the output of a GPU layer must stay on the GPU";
  gtl::testing::expect_close(ygpu.to(Device::cpu()), ycpu, tol, what + " forward (GPU vs CPU)");
  Tensor dy = Tensor::normal(ycpu.shape(), gen);
  Tensor dxcpu = cpu->backward(cctx, dy);
  Tensor dxgpu = gpu->backward(gctx, dy.to(Device::cuda(0)));
  gtl::testing::expect_close(dxgpu.to(Device::cpu()), dxcpu, tol, what + " dx (GPU vs CPU)");
  gtl::testing::expect_close(gpu_buffer.grads().to(Device::cpu()), cpu_buffer.grads(), tol,
                             what + " parameter gradients, flat (GPU vs CPU)");
}

}  // namespace

TEST(LayersGpu, Linear) {
  GTL_REQUIRE_GPU();
  compare_layer(
      [] {
        Generator g(1);
        return std::make_unique<nn::Linear>(33, 17, g);
      },
      {9, 33}, "Linear");
}

TEST(LayersGpu, Activations) {
  GTL_REQUIRE_GPU();
  compare_layer([] { return std::make_unique<nn::ReLU>(); }, {7, 13}, "ReLU");
  compare_layer([] { return std::make_unique<nn::GELU>(); }, {7, 13}, "GELU");
}

TEST(LayersGpu, LayerNorm) {
  GTL_REQUIRE_GPU();
  compare_layer([] { return std::make_unique<nn::LayerNorm>(48); }, {6, 48}, "LayerNorm");
}

TEST(LayersGpu, ResidualMLP) {
  GTL_REQUIRE_GPU();
  compare_layer(
      [] {
        Generator g(2);
        return std::make_unique<nn::ResidualMLP>(32, g);
      },
      {8, 32}, "ResidualMLP");
}

TEST(LayersGpu, ActivationCheckpoint) {
  GTL_REQUIRE_GPU();
  compare_layer(
      [] {
        Generator g(3);
        return std::make_unique<nn::ActivationCheckpoint>(std::make_unique<nn::ResidualMLP>(16, g));
      },
      {5, 16}, "ActivationCheckpoint(ResidualMLP)");
}

TEST(LayersGpu, Conv2dPoolFlatten) {
  GTL_REQUIRE_GPU();
  compare_layer(
      [] {
        Generator g(4);
        return std::make_unique<nn::Conv2d>(3, 4, 3, g, 1, 1);
      },
      {2, 3, 8, 8}, "Conv2d");
  compare_layer([] { return std::make_unique<nn::MaxPool2d>(2); }, {2, 3, 8, 8}, "MaxPool2d");
  compare_layer([] { return std::make_unique<nn::Flatten>(); }, {2, 3, 4, 4}, "Flatten");
}

TEST(LayersGpu, WholeCnn) {
  GTL_REQUIRE_GPU();
  compare_layer(
      [] {
        nn::ModelConfig c;
        c.kind = "cnn";
        c.hidden = 4;
        return nn::make_model(c);
      },
      {4, 1, 28, 28}, "CNN classifier");
}

TEST(LayersGpu, CrossEntropyHead) {
  GTL_REQUIRE_GPU();
  Generator gen(5);
  Tensor logits = Tensor::normal({6, 10}, gen);
  Tensor labels = Tensor::from_vector({0, 9, 3, 3, 7, 1}, {6}).to(DType::Int64);
  const nn::CrossEntropyLoss ce;
  nn::Context c, g;
  Tensor lc = ce.forward(logits, labels, c);
  Tensor lg = ce.forward(logits.to(Device::cuda(0)), labels.to(Device::cuda(0)), g);
  gtl::testing::expect_close(lg.to(Device::cpu()), lc, kFp32, "cross-entropy loss (GPU vs CPU)");
  gtl::testing::expect_close(ce.backward(g, 2.f).to(Device::cpu()), ce.backward(c, 2.f), kFp32,
                             "cross-entropy dlogits (GPU vs CPU)");
}

// bf16 on the GPU rounds like bf16 on the CPU (both accumulate in float32): the two agree within
// a few bf16 units (2^-8 relative), the same tolerance as bf16 vs fp32 would need.
TEST(LayersGpu, Bf16ResidualMLP) {
  GTL_REQUIRE_GPU();
  nn::PrecisionScope scope(nn::PrecisionPolicy::bf16());
  compare_layer(
      [] {
        Generator g(6);
        return std::make_unique<nn::ResidualMLP>(64, g);
      },
      {16, 64}, "ResidualMLP under bf16", {2e-2, 2e-2});
}
