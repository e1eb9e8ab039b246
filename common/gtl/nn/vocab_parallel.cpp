// The vocabulary-parallel embedding and loss (see vocab_parallel.h).
#include "gtl/nn/vocab_parallel.h"

#include <algorithm>
#include <cmath>

#include "gtl/nn/precision.h"
#include "gtl/tensor/dispatch.h"
#include "gtl_reference_guard.h"  // grader/channel: the references refuse to run in a student call

namespace gtl::nn {

VocabParallelEmbedding::VocabParallelEmbedding(Tensor rows, int64_t vocab, int64_t first_row,
                                               dist::Communicator& tp)
    : Module("vocab_parallel_embedding"),
      tp_(tp),
      vocab_(vocab),
      first_(first_row),
      dim_(rows.dim() == 2 ? rows.size(1) : 0) {
  gtl::grading::reference_guard("gtl::nn::VocabParallelEmbedding::VocabParallelEmbedding");
  GTL_CHECK(rows.dim() == 2 && rows.dtype() == DType::Float32 && !rows.is_cuda() &&
                first_row >= 0 && first_row + rows.size(0) <= vocab,
            "VocabParallelEmbedding: expected float32 CPU rows [n, D] of a table of "
                << vocab << " rows from row " << first_row << ", got " << shape_str(rows.shape()));
  add_parameter("weight", std::move(rows));
}

ComputeCost VocabParallelEmbedding::forward_cost(const Shape& input_shape) const {
  const double n = static_cast<double>(shape_numel(input_shape)), d = static_cast<double>(dim_);
  return {0, n * 8 + 2 * n * d * sizeof(float)};
}

ComputeCost VocabParallelEmbedding::backward_cost(const Shape& input_shape) const {
  const double n = static_cast<double>(shape_numel(input_shape)), d = static_cast<double>(dim_);
  const double rows = static_cast<double>(params_[0].value.size(0));
  return {n * d, n * 8 + (n * d + rows * d) * sizeof(float)};
}

Tensor VocabParallelEmbedding::forward_impl(const Tensor& ids, Context& ctx) {
  GTL_CHECK(ids.dim() == 2 && ids.dtype() == DType::Int64 && !ids.is_cuda(),
            "VocabParallelEmbedding '" << path() << "': expected int64 CPU ids [B, T], got "
                                       << shape_str(ids.shape()) << " " << dtype_name(ids.dtype()));
  const Tensor flat = ids.reshape({ids.numel()});
  const int64_t n = flat.numel(), rows = params_[0].value.size(0);
  const int64_t* id = flat.data<int64_t>();
  for (int64_t i = 0; i < n; ++i) {
    GTL_CHECK(id[i] >= 0 && id[i] < vocab_, "VocabParallelEmbedding '" << path() << "': id "
                                                                       << id[i] << " outside [0, "
                                                                       << vocab_ << ")");
  }
  Tensor y = Tensor::zeros({n, dim_});
  float* out = y.data<float>();
  // The table is float32, or the half copy of mixed precision's sharded layout (flat_parameter.h),
  // whose rows are widened exactly as ops::embedding widens them.
  GTL_DISPATCH_FLOATING(params_[0].value.dtype(), W, {
    const W* table = params_[0].value.data<W>();
    for (int64_t i = 0; i < n; ++i) {
      const int64_t row = id[i] - first_;
      if (row < 0 || row >= rows) continue;  // another rank's row: its zeros add nothing
      for (int64_t j = 0; j < dim_; ++j) out[i * dim_ + j] = convert<float>(table[row * dim_ + j]);
    }
  });
  tp_.all_reduce(y);
  ctx.saved = {flat};
  return y.reshape({ids.size(0), ids.size(1), dim_});
}

Tensor VocabParallelEmbedding::backward_impl(Context& ctx, const Tensor& dy, GradMode mode) {
  const Tensor& ids = ctx.saved.at(0);
  const int64_t n = ids.numel(), rows = params_[0].value.size(0);
  GTL_CHECK(dy.dtype() == DType::Float32 && dy.numel() == n * dim_,
            "VocabParallelEmbedding '" << path() << "': expected a float32 gradient of " << n
                                       << " x " << dim_ << ", got " << shape_str(dy.shape()));
  Tensor grad = Tensor::zeros({rows, dim_});
  const int64_t* id = ids.data<int64_t>();
  const float* g = dy.data<float>();
  float* dst = grad.data<float>();
  for (int64_t i = 0; i < n; ++i) {  // in position order, as ops::embedding_backward adds
    const int64_t row = id[i] - first_;
    if (row < 0 || row >= rows) continue;
    for (int64_t j = 0; j < dim_; ++j) dst[row * dim_ + j] += g[i * dim_ + j];
  }
  write_grad(params_[0], grad, mode);
  return Tensor();
}

Tensor VocabParallelCrossEntropy::forward(const Tensor& local_logits, const Tensor& labels,
                                          Context& ctx) const {
  gtl::grading::reference_guard("gtl::nn::VocabParallelCrossEntropy::forward");
  GTL_CHECK(local_logits.dim() == 2 && !local_logits.is_cuda() && labels.dim() == 1 &&
                labels.dtype() == DType::Int64 && labels.size(0) == local_logits.size(0),
            "VocabParallelCrossEntropy: expected CPU logits [N, V/k] and int64 labels [N], got "
                << shape_str(local_logits.shape()) << " and " << shape_str(labels.shape()));
  // Exp and log of sums want float32 (precision.h): half logits are widened first.
  const Tensor logits32 = cast_to(local_logits, DType::Float32);
  const int64_t rows = logits32.size(0), width = logits32.size(1);
  const int64_t first = tp_.rank() * width, vocab = tp_.world_size() * width;
  const float* x = logits32.data<float>();
  const int64_t* label = labels.data<int64_t>();
  Tensor lse = Tensor::empty({rows});  // the row's max, then its log-sum-exp
  Tensor target = Tensor::zeros({rows});
  float* m = lse.data<float>();
  float* t = target.data<float>();
  for (int64_t i = 0; i < rows; ++i) {
    GTL_CHECK(label[i] >= 0 && label[i] < vocab,
              "VocabParallelCrossEntropy: label " << label[i] << " outside [0, " << vocab << ")");
    const float* row = x + i * width;
    m[i] = *std::max_element(row, row + width);
    if (label[i] >= first && label[i] < first + width) t[i] = row[label[i] - first];
  }
  tp_.all_reduce(lse, dist::ReduceOp::Max);
  tp_.all_reduce(target);
  Tensor sum = Tensor::empty({rows});
  float* s = sum.data<float>();
  for (int64_t i = 0; i < rows; ++i) {
    float acc = 0.f;
    for (int64_t j = 0; j < width; ++j) acc += std::exp(x[i * width + j] - m[i]);
    s[i] = acc;
  }
  tp_.all_reduce(sum);
  double total = 0;
  for (int64_t i = 0; i < rows; ++i) {
    m[i] += std::log(s[i]);
    total += m[i] - t[i];
  }
  ctx.clear();
  ctx.input_shape = local_logits.shape();
  ctx.input_dtype = local_logits.dtype();
  ctx.saved = {logits32, labels, lse};
  const double mean = rows > 0 ? total / static_cast<double>(rows) : 0.0;
  return Tensor::from_vector({static_cast<float>(mean)}, {1});
}

Tensor VocabParallelCrossEntropy::backward(Context& ctx, float dloss) const {
  gtl::grading::reference_guard("gtl::nn::VocabParallelCrossEntropy::backward");
  GTL_CHECK(ctx.saved.size() == 3,
            "VocabParallelCrossEntropy::backward: run forward with this "
            "context first (a context is consumed by backward)");
  const Tensor& logits = ctx.saved[0];
  const int64_t rows = logits.size(0), width = logits.size(1);
  const int64_t first = tp_.rank() * width;
  const float* x = logits.data<float>();
  const int64_t* label = ctx.saved[1].data<int64_t>();
  const float* lse = ctx.saved[2].data<float>();
  Tensor dx = Tensor::empty({rows, width});
  float* d = dx.data<float>();
  const float scale = rows > 0 ? dloss / static_cast<float>(rows) : 0.f;
  for (int64_t i = 0; i < rows; ++i) {
    for (int64_t j = 0; j < width; ++j) {
      const float hit = label[i] == first + j ? 1.f : 0.f;
      d[i * width + j] = (std::exp(x[i * width + j] - lse[i]) - hit) * scale;
    }
  }
  const DType dtype = ctx.input_dtype;
  ctx.clear();
  return cast_to(dx, dtype);
}

}  // namespace gtl::nn
