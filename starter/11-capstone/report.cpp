// Lab 11, TODO 4: the report: the best plans as a table, one GPU's memory as a picture.
//
// A plan is only useful if someone can check it: the table shows what the search weighed the
// choice against, and the bar shows where the bytes go and how close to the limit they are.
#include <algorithm>
#include <cstdio>
#include <string>
#include <vector>

#include "capstone.h"
#include "gtl/runtime/error.h"

namespace lab11 {

std::string plan_table(const Plan& plan, int rows) {
  GTL_CHECK(rows >= 1, "plan_table: " << rows << " rows (>= 1)");
  std::string out;
  // TODO(lab11) step 4 (table): the Pareto front of the fitting candidates, fastest first.
  //   Spec: capstone.h, plan_table (which candidates, their order, the exact lines).
  //   Hint: once the candidates are in the table's order, what does a row need to beat
  //   among those before it? About 25 lines.
  (void)plan;
  // END TODO(lab11)
  return out;
}

std::string memory_svg(const MemoryBreakdown& memory, int64_t gpu_memory_bytes) {
  GTL_CHECK(gpu_memory_bytes >= 1 && memory.parameters >= 0 && memory.gradients >= 0 &&
                memory.optimizer >= 0 && memory.activations >= 0 && memory.other >= 0,
            "memory_svg: " << gpu_memory_bytes << " bytes a GPU, categories " << memory.parameters
                           << ", " << memory.gradients << ", " << memory.optimizer << ", "
                           << memory.activations << ", " << memory.other << " (all >= 0)");
  std::string out;
  // TODO(lab11) step 4 (figure): the stacked bar and the limit line.
  //   Spec: capstone.h, memory_svg (the lines, the scale, the coordinates).
  //   Hint: keep a running top of the stack. About 20 lines.
  // END TODO(lab11)
  return out;
}

}  // namespace lab11
