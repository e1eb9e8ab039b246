// Lab 07, TODO 2: micro-batches whose accumulated gradients are the whole batch's.
//
// The loss of a batch of N rows is the MEAN over its rows. Micro-batch i of n_i rows computes
// the mean over ITS rows; its backward starts from a weight (dloss) chosen so that the
// accumulated gradients are the whole batch's, whatever the micro-batches' sizes.
#include "gtl/runtime/error.h"
#include "pipeline.h"

namespace lab07 {

std::vector<MicroBatch> split_micro_batches(int64_t batch, int64_t m) {
  GTL_CHECK(m >= 1 && m <= batch, "split_micro_batches: " << m << " micro-batches of a batch of "
                                                          << batch << " rows (need 1 <= m <= "
                                                          << "batch: no empty micro-batch)");
  // SOLUTION(lab07) step 2: the micro-batches, and the weight of each one's mean loss.
  std::vector<MicroBatch> out;
  int64_t begin = 0;
  for (int64_t i = 0; i < m; ++i) {
    const int64_t rows = batch / m + (i < batch % m ? 1 : 0);
    out.push_back({begin, begin + rows});
    begin += rows;
  }
  return out;
  // END SOLUTION(lab07)
}

float micro_batch_weight(const MicroBatch& mb, int64_t batch) {
  // SOLUTION(lab07) step 2 (weight)
  return static_cast<float>(mb.size()) / static_cast<float>(batch);
  // END SOLUTION(lab07)
}

}  // namespace lab07
