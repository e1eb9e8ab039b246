// ops::permute: checks, the CPU loop, dispatch to permute.cu (see permute.h).
#include "gtl/ops/permute.h"

#include <algorithm>

#include "gtl/ops/detail/checks.h"
#include "gtl/ops/detail/permute_dims.h"
#include "gtl/tensor/dispatch.h"

#ifdef GTL_WITH_CUDA
#include "gtl/ops/detail/permute_cuda.h"
#endif

namespace gtl::ops {

namespace {

template <typename T>
void permute_cpu(const T* x, T* y, const detail::PermuteDims& d, int64_t n) {
  int64_t coord[detail::kMaxPermuteDims] = {};
  int64_t in = 0;  // input offset of the output element o, updated like an odometer
  for (int64_t o = 0; o < n; ++o) {
    y[o] = x[in];
    for (int i = d.rank - 1; i >= 0; --i) {
      in += d.in_stride[i];
      if (++coord[i] < d.out_size[i]) break;
      in -= coord[i] * d.in_stride[i];
      coord[i] = 0;
    }
  }
}

}  // namespace

std::vector<int64_t> inverse_permutation(const std::vector<int64_t>& dims) {
  std::vector<int64_t> inv(dims.size());
  for (std::size_t i = 0; i < dims.size(); ++i)
    inv[static_cast<std::size_t>(dims[i])] = static_cast<int64_t>(i);
  return inv;
}

Tensor permute(const Tensor& x, const std::vector<int64_t>& dims) {
  GTL_CHECK(x.defined(), "permute: x is an undefined tensor");
  const int64_t rank = x.dim();
  GTL_CHECK(static_cast<int64_t>(dims.size()) == rank && rank <= detail::kMaxPermuteDims,
            "permute: expected an order of all "
                << rank << " dimensions of x " << shape_str(x.shape()) << " (at most "
                << detail::kMaxPermuteDims << "), got " << dims.size() << " entries");
  std::vector<bool> seen(static_cast<std::size_t>(rank), false);
  for (int64_t d : dims) {
    GTL_CHECK(d >= 0 && d < rank && !seen[static_cast<std::size_t>(d)],
              "permute: dims must list each of 0.." << rank - 1 << " once, got " << d
                                                    << " out of range or twice");
    seen[static_cast<std::size_t>(d)] = true;
  }
  Shape out_shape(static_cast<std::size_t>(rank));
  const Shape strides = x.strides();
  detail::PermuteDims pd;
  pd.rank = static_cast<int>(rank);
  for (int64_t i = 0; i < rank; ++i) {
    const auto src = static_cast<std::size_t>(dims[static_cast<std::size_t>(i)]);
    out_shape[static_cast<std::size_t>(i)] = x.shape()[src];
    pd.out_size[i] = x.shape()[src];
    pd.in_stride[i] = strides[src];
  }
  Tensor y = Tensor::empty(out_shape, x.dtype(), x.device());
  if (y.numel() == 0) return y;
  if (x.is_cuda()) {
#ifdef GTL_WITH_CUDA
    cuda::permute(x, y, pd);
    return y;
#else
    detail::no_cuda("permute", x);
#endif
  }
  GTL_DISPATCH_ALL(x.dtype(), T, { permute_cpu<T>(x.data<T>(), y.data<T>(), pd, y.numel()); });
  return y;
}

}  // namespace gtl::ops
