// Lab 08, TODO 5: data x tensor parallelism on the process grid (tensor_parallel.h, section 5).
//
// Two kinds of group cut the same world: a TP group exchanges activations inside every layer,
// in forward and in backward, and a DP group exchanges gradients once per step. The layout puts
// the chatty one on neighbouring ranks (one node); which group a collective runs in decides what
// it adds up, so a sum in the wrong group is still a sum, of the wrong things.
#include <vector>

#include "gtl/runtime/error.h"
#include "tensor_parallel.h"

namespace lab08 {

DpTpGroups make_dp_tp_groups(Communicator& world, int tp_size) {
  DpTpGroups g;
  // TODO(lab08) step 5: the two groups of this rank (and, below, what each group reduces).
  //   Spec: fill tp_rank, dp_rank and the two groups of the header's layout, split from `world`
  //   (Communicator::split), every group ordered as in the world. Refuse, with a gtl::Error
  //   naming the world size and tp_size and before any split, a tp_size that does not divide the
  //   world. Yours to decide: each rank's coordinates, and the color and key of each split. Do
  //   not use the core's ProcessGrid: this is what it does. About 8 lines here.
  (void)world, (void)tp_size;
  throw gtl::Error("TODO(lab08) step 5: make_dp_tp_groups is not implemented");
  // END TODO(lab08)
  return g;
}

void finalize_gradients(const std::vector<nn::ParamRef>& params,
                        const std::vector<bool>& replicated, Communicator& tp, Communicator& dp) {
  GTL_CHECK(params.size() == replicated.size(),
            "finalize_gradients: one `replicated` flag per parameter expected, got "
                << replicated.size() << " for " << params.size() << " parameters");
  // TODO(lab08) step 5: the whole batch's gradients.
  //   Spec: as the header says, from each rank's micro-batch gradients to the gradient of the
  //   mean loss over the whole batch, by communication only, each group's calls in parameter
  //   order. Yours to decide: which parameters each group reduces, and with which ReduceOp (for
  //   each group, write what its ranks hold of one gradient, and the whole batch's gradient in
  //   terms of those). About 3 lines here.
  (void)params, (void)replicated, (void)tp, (void)dp;
  throw gtl::Error("TODO(lab08) step 5: finalize_gradients is not implemented");
  // END TODO(lab08)
}

}  // namespace lab08
