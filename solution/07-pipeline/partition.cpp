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
  // SOLUTION(lab07) step 1: minimise the slowest stage.
  const double inf = std::numeric_limits<double>::infinity();
  std::vector<double> prefix(static_cast<std::size_t>(layers) + 1, 0.0);
  for (int64_t l = 0; l < layers; ++l) {
    prefix[static_cast<std::size_t>(l) + 1] =
        prefix[static_cast<std::size_t>(l)] + layer_costs[static_cast<std::size_t>(l)];
  }
  auto cost = [&](int64_t a, int64_t b) {
    return prefix[static_cast<std::size_t>(b)] - prefix[static_cast<std::size_t>(a)];
  };
  // best[k][j]: the smallest slowest-stage cost of layers [0, j) in k stages; cut[k][j] the start
  // of the k-th stage in that cut.
  const auto rows = static_cast<std::size_t>(stages) + 1,
             cols = static_cast<std::size_t>(layers) + 1;
  std::vector<std::vector<double>> best(rows, std::vector<double>(cols, inf));
  std::vector<std::vector<int64_t>> cut(rows, std::vector<int64_t>(cols, 0));
  best[0][0] = 0.0;
  for (std::size_t k = 1; k < rows; ++k) {
    for (int64_t j = static_cast<int64_t>(k); j <= layers; ++j) {
      for (int64_t i = static_cast<int64_t>(k) - 1; i < j; ++i) {
        const double slowest = std::max(best[k - 1][static_cast<std::size_t>(i)], cost(i, j));
        if (slowest < best[k][static_cast<std::size_t>(j)]) {
          best[k][static_cast<std::size_t>(j)] = slowest;
          cut[k][static_cast<std::size_t>(j)] = i;
        }
      }
    }
  }
  std::vector<int64_t> boundaries(rows);
  boundaries[static_cast<std::size_t>(stages)] = layers;
  for (std::size_t k = rows - 1; k > 0; --k) {
    boundaries[k - 1] = cut[k][static_cast<std::size_t>(boundaries[k])];
  }
  return boundaries;
  // END SOLUTION(lab07)
}

}  // namespace lab07
