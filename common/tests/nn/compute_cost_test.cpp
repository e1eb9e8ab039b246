// Compute costs for a simulated timeline: each module reports the FLOPs and bytes of its OWN work
// for an input shape (containers report zero, their children their own), and a hook can price a
// module as it runs with m.forward_cost(m.last_input_shape()).
#include <array>
#include <map>
#include <string>
#include <vector>

#include "gtl/nn/activation.h"
#include "gtl/nn/activation_checkpoint.h"
#include "gtl/nn/causal_self_attention.h"
#include "gtl/nn/conv2d.h"
#include "gtl/nn/gpt.h"
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

// Causal self-attention's own work (its qkv and proj Linears price themselves), derived by hand
// for x [B, T, D] with H heads of d = D/H, S = B*H*T*T scores, c the compute dtype's bytes:
//   forward flops   q k^T and P v: 2 * B*H*T*T*d each = 4 B T^2 D; the mask 1 and softmax 5 per
//                   score (max, subtract, exp, sum, divide): 6S
//   forward bytes   split heads: read + write 3BTD; merge heads: read + write BTD; q k^T reads
//                   2BTD, writes S; P v reads S + BTD, writes BTD; mask reads + writes S, softmax
//                   reads S, writes S: 12 BTD + 6S elements
//   backward flops  dP = dY v^T, dV = P^T dY, dQ = dS k, dK = dS^T q: 4 * 2 B T^2 D; softmax's
//                   backward 4 per score (the row dot P.dP: 2; dS = P (dP - dot): 2): 4S
//   backward bytes  permutes 2 (BTD + 3BTD); dP reads 2BTD, writes S; dV, dQ, dK each read S +
//                   BTD, write BTD; softmax's backward reads P and dP, writes dS: 16 BTD + 7S
void expect_attention_cost(int64_t b, int64_t t, int64_t d, int64_t h) {
  Generator gen(5);
  nn::CausalSelfAttention attn(d, h, gen);
  const Shape x = {b, t, d};
  const double btd = static_cast<double>(b * t * d), s = static_cast<double>(b * h * t * t);
  const double t2d = static_cast<double>(b * t * t * d);
  const std::string shape = shape_str(x) + ", " + std::to_string(h) + " heads";
  for (const nn::PrecisionPolicy& p : {nn::PrecisionPolicy::fp32(), nn::PrecisionPolicy::bf16()}) {
    nn::PrecisionScope scope(p);
    const double c = p.compute == DType::Float32 ? 4.0 : 2.0;
    const nn::ComputeCost f = attn.forward_cost(x), bw = attn.backward_cost(x);
    EXPECT_EQ(f.flops, 4 * t2d + 6 * s)
        << shape << ": attention forward flops must be 4 B T^2 D (two T x T GEMMs) + 6S";
    EXPECT_EQ(f.bytes, (12 * btd + 6 * s) * c) << shape << ": attention forward bytes";
    EXPECT_EQ(bw.flops, 8 * t2d + 4 * s)
        << shape << ": attention backward flops must be 8 B T^2 D (four T x T GEMMs) + 4S";
    EXPECT_EQ(bw.bytes, (16 * btd + 7 * s) * c) << shape << ": attention backward bytes";
  }
}

TEST(ComputeCost, AttentionByHand) {
  expect_attention_cost(2, 5, 8, 2);
  expect_attention_cost(3, 13, 12, 3);
}

// Embeddings and the tied head, for ids [B, T] (n = B*T tokens), width D, vocabulary V:
//   token lookup     no flops; reads n int64 ids, reads and writes n rows: 8n + 2nD * 4 bytes
//   its backward     nD adds into the table; reads ids and n rows, writes the V x D table
//   positions        x [B, T, D] + the table's first T rows: BTD adds, reads x and T rows,
//                    writes BTD; backward sums dy over the batch: BTD adds, reads dy, writes TD
//   tied head        logits = h W^T: 2 n D V flops, reads h and W, writes logits; backward dh
//                    and dW: 4 n D V, each GEMM reading two operands and writing the third
TEST(ComputeCost, EmbeddingsAndTiedHeadByHand) {
  for (const auto& [b, t, d, v] :
       std::vector<std::array<int64_t, 4>>{{2, 5, 8, 11}, {3, 7, 12, 256}}) {
    nn::GPTConfig c;
    c.vocab = v;
    c.context = t;
    c.dim = d;
    c.layers = 1;
    c.heads = 2;
    nn::GPT gpt(c);
    const double n = static_cast<double>(b * t), dd = static_cast<double>(d),
                 vv = static_cast<double>(v), td = static_cast<double>(t * d);
    const std::string shape = "B " + std::to_string(b) + " T " + std::to_string(t);
    const nn::Module& wte = *gpt.children().at(0);  // children in order: wte, wpe, blocks, ln_f
    const nn::Module& wpe = *gpt.children().at(1);
    EXPECT_EQ(wte.forward_cost({b, t}).flops, 0.0) << shape << ": a lookup does no arithmetic";
    EXPECT_EQ(wte.forward_cost({b, t}).bytes, 8 * n + 2 * n * dd * 4) << shape;
    EXPECT_EQ(wte.backward_cost({b, t}).flops, n * dd) << shape;
    EXPECT_EQ(wte.backward_cost({b, t}).bytes, 8 * n + (n * dd + vv * dd) * 4) << shape;
    EXPECT_EQ(wpe.forward_cost({b, t, d}).flops, n * dd) << shape;
    EXPECT_EQ(wpe.forward_cost({b, t, d}).bytes, (2 * n * dd + td) * 4) << shape;
    EXPECT_EQ(wpe.backward_cost({b, t, d}).flops, n * dd) << shape;
    EXPECT_EQ(wpe.backward_cost({b, t, d}).bytes, (n * dd + td) * 4) << shape;
    EXPECT_EQ(gpt.forward_cost({b, t}).flops, 2 * n * dd * vv) << shape << ": tied head GEMM";
    EXPECT_EQ(gpt.forward_cost({b, t}).bytes, (n * dd + vv * dd + n * vv) * 4) << shape;
    EXPECT_EQ(gpt.backward_cost({b, t}).flops, 4 * n * dd * vv) << shape;
    EXPECT_EQ(gpt.backward_cost({b, t}).bytes, 2 * (n * vv + vv * dd + n * dd) * 4) << shape;
  }
}

// MFU's numerator (docs/core.md): 6N per token for the weight GEMMs (N = L * 12 D^2 + V * D,
// the table counted once whether tied or not) plus attention's 12 L T D. The same number from
// the cost model: every module priced at the shape it ran with, the GEMM flops summed (Linear
// and the tied head are pure GEMMs; attention's own flops less its 6S + 4S mask and softmax).
TEST(ComputeCost, GptGemmFlopsAreSixNPlusAttention) {
  for (bool tie : {true, false}) {
    nn::GPTConfig c;
    c.vocab = 13;
    c.context = 9;
    c.dim = 8;
    c.layers = 2;
    c.heads = 2;
    c.tie_head = tie;
    nn::GPT gpt(c);
    const int64_t b = 3, t = 9;
    double gemm = 0;
    nn::Hooks hooks;
    hooks.after_forward = [&](nn::Module& m) {
      const Shape& x = m.last_input_shape();
      const double flops = m.forward_cost(x).flops + m.backward_cost(x).flops;
      if (m.kind() == "linear" || m.kind() == "gpt") gemm += flops;
      if (m.kind() == "causal_self_attention") {
        gemm += flops - 10.0 * static_cast<double>(x[0] * c.heads * x[1] * x[1]);
      }
    };
    nn::HookHandle handle = gpt.add_hooks(hooks);
    nn::Context ctx;
    gpt.forward(Tensor::zeros({b, t}, DType::Int64), ctx);
    const double d = 8, v = 13, l = 2, n_params = l * 12 * d * d + v * d;
    EXPECT_EQ(gemm / (b * t), 6 * n_params + 12 * l * t * d)
        << (tie ? "tied" : "untied") << ": the cost model's GEMM flops per token must be "
        << "6N + 12 L T D, the MFU numerator of docs/core.md";
  }
}
