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
  // TODO(lab07) step 2a: m contiguous micro-batches, the larger ones first.
  //   Spec (pipeline.h): sizes differing by at most one, the larger first (10 rows in 4: 3, 3,
  //   2, 2); each starts where the previous one ends; together they cover [0, batch).
  //   Hint: how many micro-batches get the extra row? About 8 lines.
  return {};
  // END TODO(lab07)
}

float micro_batch_weight(const MicroBatch& mb, int64_t batch) {
  // TODO(lab07) step 2b: the share of the batch's mean loss.
  //   Spec: the factor that turns micro-batch mb's MEAN loss into its part of the whole batch's
  //   mean loss (micro-batches may differ in size). Hint: try your factor on 10 rows in 4
  //   micro-batches, by hand. About 1 line.
  (void)mb, (void)batch;
  return 0.f;
  // END TODO(lab07)
}

}  // namespace lab07
