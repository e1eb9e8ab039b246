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
  // SOLUTION(lab08) step 5: the two groups of this rank (and, below, what each group reduces).
  const int n = world.world_size(), r = world.rank();
  GTL_CHECK(
      tp_size >= 1 && n % tp_size == 0,
      "make_dp_tp_groups: the TP size must divide the world size " << n << ", got " << tp_size);
  g.tp_rank = r % tp_size;
  g.dp_rank = r / tp_size;
  g.tp = world.split(g.dp_rank, r);
  g.dp = world.split(g.tp_rank, r);
  // END SOLUTION(lab08)
  return g;
}

void finalize_gradients(const std::vector<nn::ParamRef>& params,
                        const std::vector<bool>& replicated, Communicator& tp, Communicator& dp) {
  GTL_CHECK(params.size() == replicated.size(),
            "finalize_gradients: one `replicated` flag per parameter expected, got "
                << replicated.size() << " for " << params.size() << " parameters");
  // SOLUTION(lab08) step 5: the whole batch's gradients.
  for (std::size_t i = 0; i < params.size(); ++i)
    if (replicated[i]) tp.all_reduce(params[i].grad, gtl::dist::ReduceOp::Sum);
  for (const nn::ParamRef& p : params) dp.all_reduce(p.grad, gtl::dist::ReduceOp::Avg);
  // END SOLUTION(lab08)
}

}  // namespace lab08
