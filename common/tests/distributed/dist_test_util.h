// Shared helpers of the distributed tests: deterministic per-rank inputs made of small integers
// (so float, fp16 and bf16 sums are exact and results can be compared bit for bit), and the
// serial reference of each reduction.
#pragma once

#include <algorithm>
#include <chrono>
#include <vector>

#include "gtl/distributed/communicator.h"
#include "gtl/distributed/in_process.h"

namespace gtl::dist::testing {

// Element i of rank r: an integer in [-5, 5]. Sums over 8 ranks stay within +-40: exact in fp16.
inline float value(int rank, int64_t i) {
  return static_cast<float>((i * 7 + rank * 13) % 11 - 5);
}

inline std::vector<float> values(int rank, int64_t n, int64_t offset = 0) {
  std::vector<float> v(n);
  for (int64_t i = 0; i < n; ++i) v[i] = value(rank, offset + i);
  return v;
}

inline Tensor input(int rank, int64_t n, DType dtype, int64_t offset = 0) {
  return Tensor::from_vector(values(rank, n, offset), {n}, dtype);
}

// The reduction over ranks 0..world-1 computed serially, rounded to `dtype` as the ring does
// (sums of small integers are exact; an average divides the exact sum once, in float).
inline std::vector<float> reduced(int world, int64_t n, DType dtype, ReduceOp op,
                                  int64_t offset = 0) {
  std::vector<float> out(n);
  for (int64_t i = 0; i < n; ++i) {
    float acc = value(0, offset + i);
    for (int r = 1; r < world; ++r) {
      const float v = value(r, offset + i);
      acc = op == ReduceOp::Max   ? std::max(acc, v)
            : op == ReduceOp::Min ? std::min(acc, v)
                                  : acc + v;
    }
    out[i] = op == ReduceOp::Avg ? acc / static_cast<float>(world) : acc;
  }
  return Tensor::from_vector(out, {n}, dtype).to_vector();
}

// Fault and timeout tests must end quickly: collectives give up after this long.
inline RunOptions fast_options(std::chrono::milliseconds timeout = std::chrono::seconds(5)) {
  RunOptions o;
  o.timeout = timeout;
  return o;
}

}  // namespace gtl::dist::testing
