// TODO 6's inputs and references, shared by tests/placement_test.cpp and the judge: the traced
// step of a TP block (recorded here with the core's tracing, independent of every student file)
// and the figures the core's simulator (gtl/distributed/timeline.h) gives for it under each
// placement.
//
// The block is the transformer MLP cut as in step 1, fc1 column-parallel ([4D/k, D] on each
// rank), GELU, fc2 row-parallel ([D, 4D/k]), with Megatron's two all-reduces written inline: one
// of fc2's output [N, D] after forward, one of fc1's input gradient [N, D] after backward. Only
// the trace matters (the costs the hooks record from the shapes, the bytes of each all-reduce),
// so the weights and data are arbitrary.
//
// The cluster is the core's default CostModel: an H100's FP32 rate and memory bandwidth, NVLink 4
// inside a node (3 us, 450 GB/s per direction), 400 Gb/s InfiniBand across nodes (5 us, 50 GB/s),
// 8 GPUs a node: published figures, not measurements (timeline.h).
#pragma once

#include <algorithm>
#include <cstdint>
#include <random>
#include <string>
#include <vector>

#include "gtl/distributed/in_process.h"
#include "gtl/distributed/module_trace.h"
#include "gtl/distributed/timeline.h"
#include "gtl/nn/activation.h"
#include "gtl/nn/linear.h"
#include "gtl/nn/sequential.h"
#include "gtl/tensor/tensor.h"
#include "gtl_test_seed.h"

namespace lab08_placement {

using gtl::dist::TraceEvent;
using Traces = std::vector<std::vector<TraceEvent>>;

// clang-format off
constexpr int64_t kDim = 256;             // D; the MLP's hidden width is 4D
constexpr int64_t kReferenceRows = 2048;  // N = B*T tokens of the handout's study
constexpr double kMaxCommFraction = 1.0 / 3;  // the study's bar: TP's all-reduces at most 1/3
constexpr double kU = 1.0 / 9007199254740992.0;  // 2^-53, double's unit roundoff
// clang-format on
inline const std::vector<int> kStudySizes = {1, 2, 4, 8, 16};

// A seeded case: N = 3 (mod 4) tokens (255 to 1023) and a width D = 2 (mod 8) (194 to 322), so
// that 4D splits 8 ways but the all-reduced [N, D] (N D = 6 mod 8 elements) does not split into 8
// equal ring chunks (ring.h): the ranks of a TP = 8 group then put different bytes on the wire,
// and rank 0 is not the one that puts the most.
struct SeededShape {
  int64_t rows = 0, dim = 0;
};
inline SeededShape seeded_shape(const std::string& test) {
  std::mt19937_64 g = gtl::test_seed::generator(test);
  SeededShape s;
  s.rows = 256 * gtl::test_seed::draw(g, 1, 4) - 1;
  s.dim = 8 * gtl::test_seed::draw(g, 24, 40) + 2;
  return s;
}

// One forward and backward of the TP MLP block of width `dim` (4 dim divisible by k) on k
// in-process ranks; traces[r] is rank r's. `uneven`: the ranks' work differs, as when one rank
// also computes what the others do not: rank 0 runs one more leaf pass (a GELU of the block's
// [N, D] output) before the forward's all-reduce, rank k-1 one more (a GELU of the [N, D] input
// gradient) before the backward's.
inline Traces traced_tp_step(int k, int64_t rows, int64_t dim = kDim, bool uneven = false) {
  Traces traces(static_cast<std::size_t>(k));
  gtl::dist::run_ranks(k, [&](gtl::dist::Communicator& comm) {
    gtl::Generator gen(7 + static_cast<uint64_t>(comm.rank()));
    gtl::nn::Sequential block;
    block.add(std::make_unique<gtl::nn::Linear>(dim, 4 * dim / k, gen), "fc1");
    block.add(std::make_unique<gtl::nn::GELU>(), "gelu");
    block.add(std::make_unique<gtl::nn::Linear>(4 * dim / k, dim, gen), "fc2");
    const gtl::Tensor x = gtl::Tensor::normal({rows, dim}, gen);
    const gtl::Tensor dy = gtl::Tensor::normal({rows, dim}, gen);
    gtl::nn::GELU extra;
    comm.trace()->clear();
    gtl::nn::HookHandle traced = gtl::dist::trace_modules(block, comm.trace());
    gtl::nn::HookHandle traced_extra = gtl::dist::trace_modules(extra, comm.trace());
    gtl::nn::Context ctx, extra_ctx;
    const gtl::Tensor y = block.forward(x, ctx);
    if (uneven && comm.rank() == 0) extra.forward(y, extra_ctx);
    comm.all_reduce(y);
    const gtl::Tensor dx = block.backward(ctx, dy);
    if (uneven && comm.rank() == k - 1) extra.forward(dx, extra_ctx);
    comm.all_reduce(dx);
    traces[static_cast<std::size_t>(comm.rank())] = comm.trace()->events();
  });
  return traces;
}

// The cluster of the study, with the group's ranks one node (IntraNode) or one per node.
inline gtl::dist::CostModel cluster(bool one_rank_per_node) {
  gtl::dist::CostModel m;
  if (one_rank_per_node) m.ranks_per_node = 1;
  return m;
}

// The core simulator's figures for a traced step: its step time, and rank 0's communication time.
struct Simulated {
  double step_time = 0, comm_time = 0, comm_fraction = 0;
  gtl::dist::Timeline timeline;
};
inline Simulated simulate(const Traces& traces, bool one_rank_per_node) {
  Simulated s;
  s.timeline = gtl::dist::simulate_timeline(traces, cluster(one_rank_per_node));
  s.step_time = s.timeline.step_time();
  s.comm_time = s.timeline.ranks[0].comm_busy;
  s.comm_fraction = s.step_time > 0 ? s.comm_time / s.step_time : 0;
  return s;
}

// Two sums of the same n positive terms in different orders (each term itself a few roundings
// away from its exact value) differ by at most 2 (n + 3) u times the sum; a ratio of two such
// figures by twice that plus one rounding. Relative bound for every figure of traces whose
// longest holds n events (handout, TODO 6).
inline double relative_bound(const Traces& traces) {
  std::size_t n = 0;
  for (const std::vector<TraceEvent>& t : traces) n = std::max(n, t.size());
  return 4.0 * (static_cast<double>(n) + 4) * kU;
}

}  // namespace lab08_placement
