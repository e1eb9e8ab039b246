// KVCache: per-layer key and value buffers, allocated once (see kv_cache.h).
#include "gtl/nn/kv_cache.h"

namespace gtl::nn {

KVCache::KVCache(int64_t layers, int64_t batch, int64_t heads, int64_t head_dim, int64_t max_len,
                 DType dtype, Device device)
    : batch_(batch), heads_(heads), head_dim_(head_dim), max_len_(max_len), dtype_(dtype) {
  GTL_CHECK(layers > 0 && batch > 0 && heads > 0 && head_dim > 0 && max_len > 0,
            "KVCache: sizes must be positive, got layers "
                << layers << ", batch " << batch << ", heads " << heads << ", head_dim " << head_dim
                << ", max_len " << max_len);
  GTL_CHECK(is_floating(dtype), "KVCache: expected a floating dtype, got " << dtype_name(dtype));
  for (int64_t l = 0; l < layers; ++l) {
    k_.push_back(Tensor::zeros({max_len, batch * heads, head_dim}, dtype, device));
    v_.push_back(Tensor::zeros({max_len, batch * heads, head_dim}, dtype, device));
  }
}

int64_t KVCache::bytes() const {
  return 2 * static_cast<int64_t>(k_.size()) * heads_ * head_dim_ * max_len_ * batch_ *
         static_cast<int64_t>(dtype_size(dtype_));
}

void KVCache::advance(int64_t new_positions) {
  GTL_CHECK(length_ + new_positions <= max_len_, "KVCache: " << length_ << " + " << new_positions
                                                             << " positions exceed max_len "
                                                             << max_len_);
  length_ += new_positions;
}

}  // namespace gtl::nn
