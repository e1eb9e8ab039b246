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
  // TODO(lab08) step 6: the simulated step of the group under `placement`, then the largest
  //   qualifying size.
  //   Spec: tensor_parallel.h, TpStepFigures and largest_tp_size, priced with CostModel's
  //   compute_time and links (timeline.h: the struct only; its "THE MODEL" comment states the
  //   simulator's rules, which are this step's answers). The traces are k ranks' records of one
  //   step, and the ranks' work need not be the same: decide which events cost time, how they
  //   add up into the group's step, and which records set an all-reduce's cost when the ranks
  //   did not all send the same bytes. Refuse IntraNode when the group does not fit in a node (a
  //   test checks the message names k and ranks_per_node). Fill f; then largest_tp_size picks
  //   among the sizes. Hint: draw two ranks' compute streams side by side, their work unequal,
  //   with the all-reduces between them. What is the step's critical path? About 30 lines for
  //   the step, 5 for the size.
  (void)k, (void)model, (void)placement;
  // END TODO(lab08)
  return f;
}

int largest_tp_size(const std::map<int, std::vector<std::vector<TraceEvent>>>& traces_by_size,
                    const gtl::dist::CostModel& model, TpPlacement placement, double max_fraction) {
  int best = 0;
  // TODO(lab08) step 6 (size): the spec is in tp_step_figures.
  (void)traces_by_size, (void)model, (void)placement, (void)max_fraction;
  // END TODO(lab08)
  return best;
}

}  // namespace lab08
