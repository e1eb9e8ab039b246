// Lab 07, TODO 1: cutting the model into p contiguous stages that balance a per-layer cost.
//
// A pipeline moves at the pace of its slowest stage: in the steady state every stage waits for it.
// So the cut to find minimises the maximum stage cost. Equal layer counts are not the answer
// (layers differ: the first Linear of an mlp holds most of its parameters), and neither is a
// greedy fill up to the average cost (it can leave the last stage with the rest). An exact
// method exists that, for tens of layers, is instant.
#include <algorithm>
#include <limits>

#include "gtl/runtime/error.h"
#include "pipeline.h"

namespace lab07 {

std::vector<int64_t> partition_layers(const std::vector<double>& layer_costs, int stages) {
  const auto layers = static_cast<int64_t>(layer_costs.size());
  GTL_CHECK(stages >= 1 && stages <= layers,
            "partition_layers: " << stages << " stages for " << layers
                                 << " layers: every stage needs at least one layer (1 <= p <= L)");
  // TODO(lab07) step 1: minimise the slowest stage.
  //   Spec: return p + 1 boundaries 0 = b_0 < ... < b_p = L (stage s: layers [b_s, b_{s+1}))
  //   whose largest stage cost (the sum of its layers' costs) is as small as any cut allows.
  //   Yours to decide: the algorithm. The tests compare your slowest stage with a brute force
  //   over every cut for up to 10 layers and every p, and with a known optimum for 40 to 60
  //   layers in about L / 3 stages, where trying every cut never finishes; equal layer counts
  //   and a greedy fill up to the average cost both fail them.
  //   Hint: where can the LAST stage start, and what is left to solve then? About 30 lines.
  (void)layer_costs;
  return {};
  // END TODO(lab07)
}

}  // namespace lab07
