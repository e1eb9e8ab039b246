// Lab 08, TODO 3: the vocabulary-parallel embedding and cross-entropy (tensor_parallel.h).
//
// The token table [V, D] and the head that reuses it are the largest matrices of a small-width
// GPT, and the logits [B*T, V] are the largest activation of all. Cutting the vocabulary across
// the tensor-parallel ranks cuts all three, as long as nobody ever reassembles [B*T, V]: the loss
// needs only three numbers per row from each rank.
#include <algorithm>
#include <cmath>
#include <vector>

#include "gtl/runtime/error.h"
#include "tensor_parallel.h"

namespace lab08 {

VocabParallelEmbedding::VocabParallelEmbedding(const nn::TokenEmbedding& full, Communicator& tp)
    : Module("vocab_parallel_embedding"),
      tp_(tp),
      vocab_(full.vocab()),
      dim_(full.dim()),
      rows_(tp_slice(full.vocab(), tp.rank(), tp.world_size(), "vocabulary rows")) {
  add_parameter("weight", full.weight().value.slice(rows_.begin, rows_.end).clone());
}

// SOLUTION(lab08) step 3a: VocabParallelEmbedding's forward and backward.
Tensor VocabParallelEmbedding::forward_impl(const Tensor& ids, nn::Context& ctx) {
  GTL_CHECK(ids.dim() == 2 && ids.dtype() == gtl::DType::Int64,
            "VocabParallelEmbedding '" << path() << "': expected int64 ids [B, T], got "
                                       << gtl::shape_str(ids.shape()));
  const int64_t n = ids.numel();
  Tensor y = Tensor::zeros({n, dim_});
  const int64_t* id = ids.data<int64_t>();
  const float* table = params_[0].value.data<float>();
  float* out = y.data<float>();
  for (int64_t i = 0; i < n; ++i) {
    GTL_CHECK(id[i] >= 0 && id[i] < vocab_,
              "VocabParallelEmbedding: id " << id[i] << " outside [0, " << vocab_ << ")");
    if (id[i] < rows_.begin || id[i] >= rows_.end) continue;  // another rank's row: zeros
    const float* row = table + (id[i] - rows_.begin) * dim_;
    for (int64_t j = 0; j < dim_; ++j) out[i * dim_ + j] = row[j];
  }
  tp_.all_reduce(y);  // exactly one rank contributes each row: the sum is that row
  ctx.saved = {ids};
  return y.reshape({ids.size(0), ids.size(1), dim_});
}

Tensor VocabParallelEmbedding::backward_impl(nn::Context& ctx, const Tensor& dy,
                                             nn::GradMode mode) {
  const Tensor& ids = ctx.saved.at(0);
  const int64_t n = ids.numel();
  Tensor grad = Tensor::zeros({rows_.size(), dim_});
  const int64_t* id = ids.data<int64_t>();
  const float* g = dy.data<float>();
  float* dst = grad.data<float>();
  for (int64_t i = 0; i < n; ++i) {
    if (id[i] < rows_.begin || id[i] >= rows_.end) continue;
    float* row = dst + (id[i] - rows_.begin) * dim_;
    for (int64_t j = 0; j < dim_; ++j) row[j] += g[i * dim_ + j];
  }
  write_grad(params_[0], grad, mode);
  return Tensor();
}
// END SOLUTION(lab08)

// SOLUTION(lab08) step 3b: VocabParallelCrossEntropy's forward and backward.
Tensor VocabParallelCrossEntropy::forward(const Tensor& local_logits, const Tensor& labels,
                                          nn::Context& ctx) const {
  GTL_CHECK(
      local_logits.dim() == 2 && local_logits.dtype() == gtl::DType::Float32 && labels.dim() == 1 &&
          labels.dtype() == gtl::DType::Int64 && labels.size(0) == local_logits.size(0),
      "VocabParallelCrossEntropy: expected float32 local logits [N, V/k] and int64 labels "
      "[N], got "
          << gtl::shape_str(local_logits.shape()) << " and " << gtl::shape_str(labels.shape()));
  const int64_t rows = local_logits.size(0), width = local_logits.size(1);
  const Slice mine = {tp_.rank() * width, (tp_.rank() + 1) * width};
  const float* x = local_logits.data<float>();
  const int64_t* label = labels.data<int64_t>();
  Tensor m = Tensor::empty({rows}), target = Tensor::zeros({rows}), s = Tensor::empty({rows});
  float* pm = m.data<float>();
  float* pt = target.data<float>();
  float* ps = s.data<float>();
  for (int64_t i = 0; i < rows; ++i) {
    GTL_CHECK(label[i] >= 0 && label[i] < tp_.world_size() * width,
              "VocabParallelCrossEntropy: label " << label[i] << " outside [0, "
                                                  << tp_.world_size() * width << ")");
    float best = x[i * width];
    for (int64_t j = 1; j < width; ++j) best = std::max(best, x[i * width + j]);
    pm[i] = best;
    if (label[i] >= mine.begin && label[i] < mine.end) pt[i] = x[i * width + label[i] - mine.begin];
  }
  tp_.all_reduce(m, gtl::dist::ReduceOp::Max);
  tp_.all_reduce(target);
  for (int64_t i = 0; i < rows; ++i) {
    float sum = 0.f;
    for (int64_t j = 0; j < width; ++j) sum += std::exp(x[i * width + j] - pm[i]);
    ps[i] = sum;
  }
  tp_.all_reduce(s);
  double total = 0;
  for (int64_t i = 0; i < rows; ++i) total += std::log(ps[i]) + pm[i] - pt[i];
  ctx.saved = {local_logits, labels, m, s};
  return Tensor::from_vector({static_cast<float>(total / static_cast<double>(rows))}, {1});
}

Tensor VocabParallelCrossEntropy::backward(nn::Context& ctx, float dloss) const {
  const Tensor& logits = ctx.saved.at(0);
  const int64_t rows = logits.size(0), width = logits.size(1);
  const int64_t begin = tp_.rank() * width;
  const float* x = logits.data<float>();
  const int64_t* label = ctx.saved.at(1).data<int64_t>();
  const float* m = ctx.saved.at(2).data<float>();
  const float* s = ctx.saved.at(3).data<float>();
  Tensor dx = Tensor::empty({rows, width});
  float* d = dx.data<float>();
  const float scale = dloss / static_cast<float>(rows);
  for (int64_t i = 0; i < rows; ++i)
    for (int64_t j = 0; j < width; ++j)
      d[i * width + j] =
          (std::exp(x[i * width + j] - m[i]) / s[i] - (label[i] == begin + j ? 1.f : 0.f)) * scale;
  ctx.clear();
  return dx;
}
// END SOLUTION(lab08)

}  // namespace lab08
