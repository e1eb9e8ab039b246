// ops::embedding and its backward: checks, the CPU loops, dispatch to embedding.cu (see
// embedding.h).
#include "gtl/ops/embedding.h"

#include "gtl_reference_guard.h"  // grader/channel: the references refuse to run in a student call

#include "gtl/ops/detail/checks.h"
#include "gtl/ops/detail/dispatch.h"
#include "gtl/tensor/dispatch.h"

#ifdef GTL_WITH_CUDA
#include "gtl/ops/detail/embedding_cuda.h"
#endif

namespace gtl::ops {

namespace {

void check_ids(const char* op, const Tensor& ids) {
  GTL_CHECK(ids.defined() && ids.dim() == 1 &&
                (ids.dtype() == DType::Int64 || ids.dtype() == DType::Int32),
            op << ": expected ids [N] of int64 or int32, got "
               << (ids.defined() ? shape_str(ids.shape()) + " " + dtype_name(ids.dtype())
                                 : std::string("an undefined tensor")));
}

template <typename L>
int64_t checked_id(const char* op, const L* ids, int64_t n, int64_t vocab) {
  const auto v = static_cast<int64_t>(ids[n]);
  GTL_CHECK(v >= 0 && v < vocab,
            op << ": ids[" << n << "] = " << v << " is outside the table's " << vocab << " rows");
  return v;
}

}  // namespace

Tensor embedding(const Tensor& table, const Tensor& ids) {
  gtl::grading::reference_guard("gtl::ops::embedding");
  const char* op = "embedding";
  check_ids(op, ids);
  GTL_CHECK(table.defined() && table.dim() == 2 && is_floating(table.dtype()),
            op << ": expected a float32, float16 or bfloat16 table [V, D]");
  check_same_device(op, {&table, &ids});
  const int64_t n = ids.size(0), d = table.size(1), vocab = table.size(0);
  Tensor rows = Tensor::empty({n, d}, DType::Float32, table.device());
  if (rows.numel() == 0) return rows;
  if (table.is_cuda()) {
#ifdef GTL_WITH_CUDA
    cuda::embedding(table, ids, rows);
    return rows;
#else
    detail::no_cuda(op, table);
#endif
  }
  float* r = rows.data<float>();
  GTL_DISPATCH_FLOATING(table.dtype(), W, {
    const W* t = table.data<W>();
    GTL_DISPATCH_LABELS(ids.dtype(), L, {
      const L* id = ids.data<L>();
      for (int64_t i = 0; i < n; ++i) {
        const W* row = t + checked_id(op, id, i, vocab) * d;
        for (int64_t c = 0; c < d; ++c) r[i * d + c] = convert<float>(row[c]);
      }
    });
  });
  return rows;
}

Tensor embedding_backward(const Tensor& drows, const Tensor& ids, int64_t vocab) {
  gtl::grading::reference_guard("gtl::ops::embedding_backward");
  const char* op = "embedding_backward";
  check_ids(op, ids);
  GTL_CHECK(drows.defined() && drows.dim() == 2 && drows.size(0) == ids.size(0) &&
                drows.dtype() == DType::Float32,
            op << ": expected float32 drows [" << ids.size(0) << ", D], got "
               << shape_str(drows.shape()));
  GTL_CHECK(vocab >= 0, op << ": vocab must be >= 0, got " << vocab);
  check_same_device(op, {&drows, &ids});
  const int64_t n = ids.size(0), d = drows.size(1);
  Tensor dtable = Tensor::zeros({vocab, d}, DType::Float32, drows.device());
  if (dtable.numel() == 0 || n == 0) return dtable;
  if (drows.is_cuda()) {
#ifdef GTL_WITH_CUDA
    cuda::embedding_backward(drows, ids, dtable);
    return dtable;
#else
    detail::no_cuda(op, drows);
#endif
  }
  const float* g = drows.data<float>();
  float* dt = dtable.data<float>();
  GTL_DISPATCH_LABELS(ids.dtype(), L, {
    const L* id = ids.data<L>();
    for (int64_t i = 0; i < n; ++i) {
      float* row = dt + checked_id(op, id, i, vocab) * d;
      for (int64_t c = 0; c < d; ++c) row[c] += g[i * d + c];
    }
  });
  return dtable;
}

}  // namespace gtl::ops
