// Lab 03, TODO 2: autocast, the activation memory it saves, and the weight copy made once.
//
// Autocast runs an op in half precision where that is fast and safe, and keeps in float32 what
// 8 or 11 bits of precision would break (the handout's "Tensor cores" gives the criteria). An op
// saves for backward what its backward reads, in the dtype it computed in, so half precision
// shrinks those activations, but not the float32 islands: the saving is less than 2x.
#include <cstring>

#include "gtl/nn/conv2d.h"
#include "gtl/nn/linear.h"
#include "gtl/tensor/half.h"
#include "mixed_precision.h"

namespace lab03 {

const char* op_name(Op op) {
  switch (op) {
    case Op::MatMul:
      return "matmul";
    case Op::Conv2d:
      return "conv2d";
    case Op::Activation:
      return "activation";
    case Op::Softmax:
      return "softmax";
    case Op::CrossEntropy:
      return "cross_entropy";
    case Op::LayerNorm:
      return "layernorm";
    case Op::Reduction:
      return "reduction";
    case Op::ResidualAdd:
      return "residual_add";
  }
  return "?";
}

DType autocast_dtype(Op op, const gtl::nn::PrecisionPolicy& policy) {
  // SOLUTION(lab03) step 2a
  switch (op) {
    case Op::MatMul:
    case Op::Conv2d:
    case Op::Activation:  // runs on a matmul's output, in its dtype
      return policy.compute;
    default:
      return DType::Float32;
  }
  // END SOLUTION(lab03)
}

int64_t saved_activation_bytes(const gtl::nn::ModelConfig& config, int64_t batch,
                               const gtl::nn::PrecisionPolicy& policy) {
  GTL_CHECK(config.kind == "mlp", "saved_activation_bytes: only the mlp, got " << config.kind);
  // SOLUTION(lab03) step 2b
  int64_t in = 1;
  for (int64_t s : config.input) in *= s;
  const int64_t d = config.hidden, n = batch;
  const auto size = [&](Op op) {
    return static_cast<int64_t>(gtl::dtype_size(autocast_dtype(op, policy)));
  };
  const int64_t layernorm = n * d * size(Op::LayerNorm) + 2 * n * 4;  // its input; mean, rstd
  int64_t bytes = n * in * size(Op::MatMul);                          // first Linear's input
  // Each block: LN, fc1's input (d), GELU's input (4d), fc2's input (4d).
  bytes += config.blocks * (layernorm + n * 9 * d * size(Op::MatMul));
  bytes += layernorm + n * d * size(Op::MatMul);                 // final LN, head Linear
  bytes += n * config.classes * size(Op::CrossEntropy) + n * 8;  // logits, int64 labels
  return bytes;
  // END SOLUTION(lab03)
}

// SOLUTION(lab03) step 2c
HalfWeightCache::HalfWeightCache(gtl::nn::Module& model, DType dtype) : dtype_(dtype) {
  GTL_CHECK(dtype == DType::Float16 || dtype == DType::BFloat16,
            "HalfWeightCache: expected float16 or bfloat16, got " << dtype);
  // A Linear multiplies its weight in half (it adds its bias in float32); a Conv2d hands both its
  // weight and its bias to the half convolution. Other layers read no parameter in half.
  std::vector<gtl::nn::Module*> todo = {&model};
  while (!todo.empty()) {
    gtl::nn::Module* m = todo.back();
    todo.pop_back();
    for (const auto& child : m->children()) todo.push_back(child.get());
    std::vector<ParamRef*> read = m->parameter_slots();
    if (dynamic_cast<gtl::nn::Linear*>(m) != nullptr) {
      read.resize(1);
    } else if (dynamic_cast<gtl::nn::Conv2d*>(m) == nullptr) {
      continue;
    }
    for (ParamRef* p : read) {
      GTL_CHECK(!p->value.is_cuda(), "HalfWeightCache: CPU parameters only");
      p->compute = Tensor::empty(p->value.shape(), dtype_, p->value.device());
      slots_.push_back(p);
    }
  }
  refresh();
}

void HalfWeightCache::refresh() const {
  for (const ParamRef* p : slots_) {
    const float* v = p->value.data<float>();
    uint16_t* h = static_cast<uint16_t*>(p->compute.data_ptr());
    for (int64_t i = 0; i < p->value.numel(); ++i) {
      h[i] = dtype_ == DType::Float16 ? gtl::half(v[i]).bits : gtl::bfloat16(v[i]).bits;
    }
  }
}

int64_t HalfWeightCache::bytes() const {
  int64_t total = 0;
  for (const ParamRef* p : slots_) total += static_cast<int64_t>(p->compute.nbytes());
  return total;
}
// END SOLUTION(lab03)

}  // namespace lab03
