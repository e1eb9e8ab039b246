// Causal mask: attention scores of a query for keys in its future set to -inf, in place.
//
//   ops::causal_mask_(scores);              // scores [N, Tq, Tk], Tq queries, Tk keys
//
// Query i (0-based among the Tq) sits at position i + (Tk - Tq) of the sequence: the last Tq of
// the Tk positions (Tq == Tk in training; Tq = 1 when decoding one token against a KV cache of
// Tk, nn/kv_cache.h). It may attend to keys j <= i + (Tk - Tq); every later key is set to -inf,
// so softmax gives it weight exactly 0 (exp(-inf) = 0) and softmax's backward gives it gradient
// exactly 0 (it multiplies by the weight). The mask needs no backward of its own, and no row is
// ever all -inf (key j = the query's own position is always kept), so softmax never sees 0/0.
//
// Backends: CPU a loop; CUDA one thread per score (a write only where masked). Any float dtype.
#pragma once

#include "gtl/tensor/tensor.h"

namespace gtl::ops {

void causal_mask_(const Tensor& scores);

}  // namespace gtl::ops
