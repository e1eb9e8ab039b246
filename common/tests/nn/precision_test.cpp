// The precision policy: half-precision matmuls, float32 where rounding would break, and results
// close to float32 within tolerances stated per dtype.
//
// Tolerances on the logits of a 2-block MLP (|logit| ~ 1), |a - e| <= atol + rtol |e|:
//   bf16 (8 significant bits, unit roundoff 2^-9 ~ 2e-3): atol 4e-2, rtol 4e-2
//   fp16 (11 significant bits, 2^-12 ~ 2.4e-4):          atol 5e-3, rtol 5e-3
// Each GEMM rounds its inputs and output once; a handful of roundings in sequence, with float32
// accumulation inside every GEMM, stays within about ten unit roundoffs.
#include "gtl/nn/precision.h"
#include "gtl/nn/cross_entropy.h"
#include "gtl/nn/linear.h"
#include "gtl/nn/models.h"
#include "gtl/nn/parameter_buffer.h"
#include "gtl_test.h"

using namespace gtl;
using gtl::testing::Tolerance;

namespace {

std::unique_ptr<nn::Sequential> mlp() {
  nn::ModelConfig c;
  c.input = {1, 8, 8};
  c.hidden = 32;
  c.blocks = 2;
  c.seed = 3;
  return nn::make_model(c);
}

Tensor logits_under(nn::Module& model, const Tensor& x, const nn::PrecisionPolicy& policy) {
  nn::PrecisionScope scope(policy);
  nn::Context ctx;
  return model.forward(x, ctx);
}

}  // namespace

TEST(Precision, HalfForwardIsCloseToFloat32) {
  auto model = mlp();
  Generator gen(4);
  Tensor x = Tensor::uniform({16, 1, 8, 8}, gen);
  const Tensor ref = logits_under(*model, x, nn::PrecisionPolicy::fp32());
  struct Case {
    nn::PrecisionPolicy policy;
    Tolerance tol;
  };
  for (const Case& c : {Case{nn::PrecisionPolicy::bf16(), {4e-2, 4e-2}},
                        Case{nn::PrecisionPolicy::fp16(), {5e-3, 5e-3}}}) {
    const Tensor half = logits_under(*model, x, c.policy);
    EXPECT_EQ(half.dtype(), c.policy.compute) << "the last Linear computes in the policy's dtype";
    gtl::testing::expect_close(half.to(DType::Float32), ref, c.tol,
                               c.policy.name() + " logits vs fp32 (autocast-style policy)");
    // And it is not secretly float32: the half result differs from the reference somewhere.
    EXPECT_NE(half.to(DType::Float32).to_vector(), ref.to_vector())
        << c.policy.name() << " gave bitwise float32 results: the policy was not applied";
  }
}

TEST(Precision, Float32IslandsStayFloat32) {
  Generator gen(5);
  nn::Linear fc(8, 4, gen);
  nn::PrecisionScope scope(nn::PrecisionPolicy::bf16());
  nn::Context ctx, loss_ctx;
  Tensor x = Tensor::normal({3, 8}, gen);
  Tensor logits = fc.forward(x, ctx);
  EXPECT_EQ(logits.dtype(), DType::BFloat16);
  const nn::CrossEntropyLoss ce;
  Tensor loss = ce.forward(logits, Tensor::from_vector({0, 1, 2}, {3}).to(DType::Int64), loss_ctx);
  EXPECT_EQ(loss.dtype(), DType::Float32) << "cross-entropy must compute in float32";
  Tensor dlogits = ce.backward(loss_ctx);
  EXPECT_EQ(dlogits.dtype(), DType::BFloat16) << "the gradient returns in the logits' dtype";
  Tensor dx = fc.backward(ctx, dlogits);
  EXPECT_EQ(dx.dtype(), DType::Float32) << "dx comes back in the dtype the input had";
  EXPECT_EQ(fc.parameters()[0].grad.dtype(), DType::Float32) << "gradients are float32 masters";

  // The residual stream and LayerNorm stay float32 inside a half-precision MLP.
  auto model = mlp();
  nn::Context mctx;
  model->forward(Tensor::uniform({2, 1, 8, 8}, gen), mctx);
  EXPECT_EQ((*model)[2].kind(), "residual_mlp");
  // Block 2 gets the first Linear's bf16 output; block 3 gets block 2's float32 sum.
  const nn::Context& block = mctx.children[3];
  EXPECT_EQ(block.input_dtype, DType::Float32) << "the residual stream is float32";
  EXPECT_EQ(block.children[0].saved[0].dtype(), DType::Float32) << "LayerNorm computes in fp32";
  EXPECT_EQ(block.children[1].saved[0].dtype(), DType::BFloat16) << "fc1 saves its bf16 input";
}

TEST(Precision, HalfGradientsAreCloseToFloat32) {
  auto model = mlp();
  Generator gen(6);
  Tensor x = Tensor::uniform({16, 1, 8, 8}, gen);
  Tensor dy = Tensor::normal({16, 10}, gen);
  auto grads_under = [&](const nn::PrecisionPolicy& policy) {
    nn::PrecisionScope scope(policy);
    nn::Context ctx;
    model->forward(x, ctx);
    model->backward(ctx, dy);
    std::vector<std::vector<float>> g;
    for (const nn::ParamRef& p : model->parameters()) g.push_back(p.grad.to_vector());
    return g;
  };
  const auto ref = grads_under(nn::PrecisionPolicy::fp32());
  const auto bf16 = grads_under(nn::PrecisionPolicy::bf16());
  const auto params = model->parameters();
  for (std::size_t i = 0; i < ref.size(); ++i) {
    float scale = 0;  // gradients are compared relative to their largest element
    for (float v : ref[i]) scale = std::max(scale, std::fabs(v));
    const std::string err = gtl::testing::compare(bf16[i], ref[i], {5e-2 * scale, 5e-2});
    EXPECT_TRUE(err.empty()) << params[i].name << ": bf16 gradient vs fp32 (atol 5% of the "
                             << "largest element, rtol 5%): " << err;
  }
}

// With a compute copy the layers read the copy instead of casting: same rounding, same result.
TEST(Precision, ComputeCopyGivesTheSameResultAsCasting) {
  auto model = mlp();
  Generator gen(7);
  Tensor x = Tensor::uniform({4, 1, 8, 8}, gen);
  const std::vector<float> cast = logits_under(*model, x, nn::PrecisionPolicy::bf16()).to_vector();
  nn::ParameterBuffer buffer(*model, Device::cpu());
  buffer.enable_compute_copy(DType::BFloat16);
  const std::vector<float> copy = logits_under(*model, x, nn::PrecisionPolicy::bf16()).to_vector();
  EXPECT_TRUE(gtl::testing::compare(copy, cast, {0, 0}).empty())
      << "the bf16 compute copy must round exactly like casting the master";
  // Under fp32 the same model ignores the copy and uses the masters.
  const std::vector<float> fp32 = logits_under(*model, x, nn::PrecisionPolicy::fp32()).to_vector();
  EXPECT_NE(fp32, copy);
}

TEST(Precision, PerParameterComputeCopiesRoundLikeTheFlatOne) {
  auto model = mlp();
  Generator gen(7);
  Tensor x = Tensor::uniform({4, 1, 8, 8}, gen);
  const std::vector<float> cast = logits_under(*model, x, nn::PrecisionPolicy::bf16()).to_vector();
  nn::add_compute_copies(model->parameter_slots(), DType::BFloat16);
  for (const nn::ParamRef& p : model->parameters()) {
    ASSERT_EQ(p.compute.dtype(), DType::BFloat16) << p.name << ": no bf16 compute copy";
    EXPECT_EQ(p.compute.shape(), p.value.shape()) << p.name;
    EXPECT_NE(p.compute.data_ptr(), p.value.data_ptr()) << p.name << ": a copy of its own";
  }
  const std::vector<float> copy = logits_under(*model, x, nn::PrecisionPolicy::bf16()).to_vector();
  EXPECT_TRUE(gtl::testing::compare(copy, cast, {0, 0}).empty())
      << "each parameter's bf16 compute copy must round exactly like casting the master";
  EXPECT_THROW(nn::add_compute_copies(model->parameter_slots(), DType::Float32), Error)
      << "a float32 'compute copy' is no copy: the call must refuse it";
}

TEST(Precision, ScopeRestoresAndParseRejectsUnknownNames) {
  EXPECT_EQ(nn::current_precision().name(), "fp32");
  {
    nn::PrecisionScope a(nn::PrecisionPolicy::fp16());
    EXPECT_EQ(nn::current_precision().name(), "fp16");
    EXPECT_TRUE(nn::current_precision().needs_loss_scaling());
    {
      nn::PrecisionScope b(nn::PrecisionPolicy::parse("tf32"));
      EXPECT_TRUE(ops::tf32_enabled());
      EXPECT_EQ(nn::current_precision().compute, DType::Float32);
    }
    EXPECT_FALSE(ops::tf32_enabled());
    EXPECT_EQ(nn::current_precision().name(), "fp16");
  }
  EXPECT_EQ(nn::current_precision().name(), "fp32");
  for (const char* name : {"fp32", "tf32", "fp16", "bf16"}) {
    EXPECT_EQ(nn::PrecisionPolicy::parse(name).name(), name);
  }
  try {
    nn::PrecisionPolicy::parse("fp8");
    FAIL() << "parse(\"fp8\") must throw";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("expected fp32, tf32, fp16 or bf16"), std::string::npos);
  }
}
