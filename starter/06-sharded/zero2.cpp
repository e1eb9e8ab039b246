// Lab 06, TODO 3: ZeRO-2, the gradients sharded too.
//
// After the reduce-scatter a rank only reads its shard of the averaged gradient, so the full
// gradient buffer (4 bytes per parameter) need not outlive backward: it is freed until the next
// one. Same traffic as DDP and ZeRO-1.
#include "sharded.h"

namespace lab06 {

using gtl::dist::ReduceOp;

Zero2::Zero2(Communicator& comm, gtl::nn::FlatParameter& flat, gtl::optim::AdamWOptions options)
    : comm_(comm), flat_(flat) {
  // TODO(lab06) step 3a: the shard's AdamW as in ZeRO-1, then free the full gradient.
  //   About 4 lines.
  (void)options;
  // END TODO(lab06)
}

void Zero2::before_backward() {
  // TODO(lab06) step 3b: the full gradient exists, zeroed, for backward. About 1 line.
  // END TODO(lab06)
}

void Zero2::after_backward() {
  // TODO(lab06) step 3c: average into flat_.shard_grads(), then free the full gradient.
  //   About 2 lines.
  // END TODO(lab06)
}

void Zero2::step() {
  // TODO(lab06) step 3d: as ZeRO-1's step. About 2 lines.
  // END TODO(lab06)
}

}  // namespace lab06
