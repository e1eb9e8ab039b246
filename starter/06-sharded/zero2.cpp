// Lab 06, TODO 3: ZeRO-2, the gradients sharded too.
//
// Once averaged, a rank only reads its shard of the gradient, so the full gradient buffer (4 bytes
// per parameter) need not outlive backward. Same traffic as DDP and ZeRO-1.
#include "sharded.h"

namespace lab06 {

using gtl::dist::ReduceOp;

Zero2::Zero2(Communicator& comm, gtl::nn::FlatParameter& flat, gtl::optim::AdamWOptions options)
    : comm_(comm), flat_(flat) {
  // TODO(lab06) step 3a: the shard's AdamW (as 2a). From here to the first backward the rank
  //   must hold only the ZeRO-2 formula's bytes (zero2-memory checks it right after this
  //   constructor). About 4 lines.
  (void)options;
  // END TODO(lab06)
}

void Zero2::before_backward() {
  // TODO(lab06) step 3b: backward runs right after this and ACCUMULATES into flat_.grads().
  //   About 1 line.
  // END TODO(lab06)
}

void Zero2::after_backward() {
  // TODO(lab06) step 3c: backward is done. The optimizer's gradient must hold the average over
  //   ranks, and until the next backward only the gradient's shard may exist. About 2 lines.
  // END TODO(lab06)
}

void Zero2::step() {
  // TODO(lab06) step 3d: the contract of 2c. About 2 lines.
  // END TODO(lab06)
}

}  // namespace lab06
