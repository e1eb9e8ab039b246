// use_attention_kernels: the seam's installer (attention_kernels.h).
#include "gtl/nn/attention_kernels.h"

#include "gtl/nn/causal_self_attention.h"

namespace gtl::nn {

int64_t use_attention_kernels(Module& model, std::shared_ptr<const AttentionKernels> kernels) {
  int64_t set = 0;
  if (auto* attention = dynamic_cast<CausalSelfAttention*>(&model)) {
    attention->set_kernels(kernels);
    ++set;
  }
  for (const auto& child : model.children()) set += use_attention_kernels(*child, kernels);
  return set;
}

}  // namespace gtl::nn
