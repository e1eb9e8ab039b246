// Host launchers of core_patterns_kernels.cu (see core_patterns_test.cpp).
#pragma once

#include <cstdint>

namespace emutest::core {

// Two block reductions in a row, as LayerNorm's mean then variance: every thread of one block of
// `threads` writes the first total it received to firsts[thread] and the second to
// seconds[thread]. The second sums x[i] * x[i]. With `core_reduce` the core's own block_reduce
// (gtl/ops/detail/warp_reduce.cuh); without it, a copy that lacks its leading __syncthreads.
void two_block_sums(const float* x, int64_t n, int threads, bool core_reduce, float* firsts,
                    float* seconds);

// A grid-stride loop over n elements whose bound is off by one (`i <= n`): y[i] = 2 x[i].
void scale_with_off_by_one_bound(const float* x, float* y, int64_t n);

}  // namespace emutest::core
