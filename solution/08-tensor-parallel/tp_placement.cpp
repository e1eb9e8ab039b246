// Lab 08, TODO 6: where a tensor-parallel group belongs. The same traced step of a TP block,
// simulated with the core's cost model (tensor_parallel.h, TpStepFigures) with the group inside
// one node and with one rank per node, and the largest TP size whose all-reduces stay under a
// given share of the step.
//
// Every collective TP issues is synchronous: the layer after it needs its result. What does that
// make of where the group sits?
#include <algorithm>
#include <string>
#include <vector>

#include "gtl/runtime/error.h"
#include "tensor_parallel.h"

namespace lab08 {

using gtl::dist::TraceEvent;
using gtl::dist::TraceKind;

TpStepFigures tp_step_figures(const std::vector<std::vector<TraceEvent>>& traces,
                              const gtl::dist::CostModel& model, TpPlacement placement) {
  GTL_CHECK(!traces.empty(), "tp_step_figures: no traces (a TP group has at least one rank)");
  const int k = static_cast<int>(traces.size());
  TpStepFigures f;
  // SOLUTION(lab08) step 6
  GTL_CHECK(placement != TpPlacement::IntraNode || k <= model.ranks_per_node,
            "tp_step_figures: a TP group of " << k << " ranks does not fit in one node of "
                                              << model.ranks_per_node << " ranks");
  const gtl::dist::Link& link =
      placement == TpPlacement::IntraNode ? model.intra_node : model.inter_node;
  // Every all-reduce is synchronous over the whole group: it starts when the slowest rank reaches
  // it, so the step is, segment by segment, the slowest rank's compute, then the all-reduce.
  std::vector<double> segment;  // compute before all-reduce j (last: the tail), the most of a rank
  std::vector<int64_t> wire;    // per all-reduce, in order: the most any member sent
  auto at_least = [](auto& v, std::size_t j, auto x) {
    if (v.size() <= j) v.resize(j + 1, 0);
    v[j] = std::max(v[j], x);
  };
  for (const std::vector<TraceEvent>& trace : traces) {
    std::size_t j = 0;
    double compute = 0;
    for (const TraceEvent& e : trace) {
      if (e.kind == TraceKind::ModuleEnd && e.leaf)
        compute += model.compute_time(e.flops, e.mem_bytes);
      if (e.kind != TraceKind::Collective) continue;
      at_least(segment, j, compute);
      at_least(wire, j, e.bytes_sent);
      compute = 0;
      ++j;
    }
    at_least(segment, j, compute);
  }
  double compute = 0;
  for (double s : segment) compute += s;
  if (k > 1)
    for (int64_t bytes : wire)
      f.comm_time += 2.0 * (k - 1) * link.alpha_s + static_cast<double>(bytes) / link.bandwidth;
  f.step_time = compute + f.comm_time;
  f.comm_fraction = f.step_time > 0 ? f.comm_time / f.step_time : 0;
  // END SOLUTION(lab08)
  return f;
}

int largest_tp_size(const std::map<int, std::vector<std::vector<TraceEvent>>>& traces_by_size,
                    const gtl::dist::CostModel& model, TpPlacement placement, double max_fraction) {
  int best = 0;
  // SOLUTION(lab08) step 6 (size)
  for (const auto& [k, traces] : traces_by_size) {
    if (placement == TpPlacement::IntraNode && k > model.ranks_per_node) continue;
    if (tp_step_figures(traces, model, placement).comm_fraction <= max_fraction)
      best = std::max(best, k);
  }
  // END SOLUTION(lab08)
  return best;
}

}  // namespace lab08
