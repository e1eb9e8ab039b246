// Lab 06, TODO 3: ZeRO-2, the gradients sharded too.
//
// Once averaged, a rank only reads its shard of the gradient, so the full gradient buffer (4 bytes
// per parameter) need not outlive backward. Same traffic as DDP and ZeRO-1.
#include "sharded.h"

namespace lab06 {

using gtl::dist::ReduceOp;

Zero2::Zero2(Communicator& comm, gtl::nn::FlatParameter& flat, gtl::optim::AdamWOptions options)
    : comm_(comm), flat_(flat) {
  // SOLUTION(lab06) step 3: the shard's optimizer, and no full gradient between steps
  if (std::optional<ParamRef> shard = flat_.shard_param()) {
    optimizer_ = std::make_unique<gtl::optim::AdamW>(std::vector<ParamRef>{*shard}, options);
  }
  flat_.release_grads();
  // END SOLUTION(lab06)
}

void Zero2::before_backward() {
  // SOLUTION(lab06) step 3 (before backward): a zeroed full gradient for backward
  flat_.materialize_grads();
  // END SOLUTION(lab06)
}

void Zero2::after_backward() {
  // SOLUTION(lab06) step 3 (backward done): keep only the averaged shard
  comm_.reduce_scatter(flat_.grads(), flat_.shard_grads(), ReduceOp::Avg);
  flat_.release_grads();
  // END SOLUTION(lab06)
}

void Zero2::step() {
  // SOLUTION(lab06) step 3 (the update): update the shard, then gather every rank's shard
  if (optimizer_) optimizer_->step();
  comm_.all_gather(flat_.shard_values(), flat_.values());
  // END SOLUTION(lab06)
}

}  // namespace lab06
