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
  // TODO(lab07) step 2: the micro-batches, and the weight of each one's mean loss.
  //   Spec (pipeline.h, 2): split_micro_batches: m contiguous micro-batches in order, covering
  //   [0, batch), sizes differing by at most one, the larger first. micro_batch_weight: the
  //   dloss of mb's backward, such that the gradients accumulated over the micro-batches of ANY
  //   split (sizes may differ) are the gradient of the whole batch's mean loss.
  //   Yours to decide: how many micro-batches get an extra row, and the weight. About 9 lines in
  //   all over the two functions.
  return {};
  // END TODO(lab07)
}

float micro_batch_weight(const MicroBatch& mb, int64_t batch) {
  // TODO(lab07) step 2 (weight): the spec is in split_micro_batches.
  (void)mb, (void)batch;
  return 0.f;
  // END TODO(lab07)
}

}  // namespace lab07
