// Lab 06, TODO 2: ZeRO-1, the optimizer state sharded.
//
// AdamW's m and v are 8 of the 16 bytes a parameter costs under DDP, and each rank only needs
// them for the elements it updates: with N ranks each updates 1/N of the model, and every rank
// needs the others' updates before its next forward. Same traffic as DDP, without its all-reduce.
#include "sharded.h"

namespace lab06 {

using gtl::dist::ReduceOp;

Zero1::Zero1(Communicator& comm, gtl::nn::FlatParameter& flat, gtl::optim::AdamWOptions options)
    : comm_(comm), flat_(flat) {
  // SOLUTION(lab06) step 2: an AdamW over the shard's real elements, if it has any
  if (std::optional<ParamRef> shard = flat_.shard_param()) {
    optimizer_ = std::make_unique<gtl::optim::AdamW>(std::vector<ParamRef>{*shard}, options);
  }
  // END SOLUTION(lab06)
}

void Zero1::after_backward() {
  // SOLUTION(lab06) step 2 (backward done): reduce-scatter the full gradient into its own chunk r
  comm_.reduce_scatter(flat_.grads(), flat_.full_grads_chunk(comm_.rank()), ReduceOp::Avg);
  // END SOLUTION(lab06)
}

void Zero1::step() {
  // SOLUTION(lab06) step 2 (the update): update the shard, then gather every rank's shard
  if (optimizer_) optimizer_->step();
  comm_.all_gather(flat_.shard_values(), flat_.values());
  // END SOLUTION(lab06)
}

}  // namespace lab06
