// Lab 06, TODO 2: ZeRO-1, the optimizer state sharded.
//
// AdamW's m and v are 8 of the 16 bytes a parameter costs under DDP, and each rank only needs
// them for the elements it updates: with N ranks each updates 1/N of the model, and an all-gather
// hands every rank the others' updates. Same traffic as DDP: its all-reduce IS a reduce-scatter
// followed by an all-gather.
#include "sharded.h"

namespace lab06 {

using gtl::dist::ReduceOp;

Zero1::Zero1(Communicator& comm, gtl::nn::FlatParameter& flat, gtl::optim::AdamWOptions options)
    : comm_(comm), flat_(flat) {
  // TODO(lab06) step 2a: optimizer_ = an AdamW over this rank's shard only.
  //   Hint: flat_.shard_param() is the shard's real elements, or nullopt when the shard is all
  //   padding (then no optimizer). About 3 lines.
  (void)options;
  // END TODO(lab06)
}

void Zero1::after_backward() {
  // TODO(lab06) step 2b: chunk comm_.rank() of flat_.grads() = its average over ranks.
  //   Hint: one reduce_scatter; its output may be the input's own chunk
  //   (flat_.full_grads_chunk(r)). About 1 line.
  // END TODO(lab06)
}

void Zero1::step() {
  // TODO(lab06) step 2c: step the optimizer (if any), then every rank's full values = the
  //   concatenated shards (flat_.shard_values() -> flat_.values()). About 2 lines.
  // END TODO(lab06)
}

}  // namespace lab06
