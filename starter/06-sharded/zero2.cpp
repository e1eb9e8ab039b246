// Lab 06, TODO 3: ZeRO-2, the gradients sharded too.
//
// Once averaged, a rank only reads its shard of the gradient, so the full gradient buffer (4 bytes
// per parameter) need not outlive backward. Same traffic as DDP and ZeRO-1.
#include "sharded.h"

namespace lab06 {

using gtl::dist::ReduceOp;

Zero2::Zero2(Communicator& comm, gtl::nn::FlatParameter& flat, gtl::optim::AdamWOptions options)
    : comm_(comm), flat_(flat) {
  // TODO(lab06) step 3: ZeRO-2, over this constructor, before_backward, after_backward and
  //   step(). Spec (sharded.h section 3): the optimizer as in TODO 2. When this constructor
  //   returns, and between steps, the rank's allocator holds exactly the ZeRO-2 formula's bytes
  //   (the handout's table; zero2-memory measures right here, before any backward, and after
  //   steps). Backward runs right after before_backward returns and writes each parameter's
  //   gradient into its view of flat_.grads() (GradMode::Overwrite). When after_backward returns,
  //   the gradient the optimizer reads holds this step's gradient averaged over ranks. When step()
  //   returns, flat_.values() are the whole updated model. The step moves exactly DDP's bytes,
  //   without an all-reduce. Decide, from construction to the end of a step, when the full
  //   gradient exists. About 9 lines over the four functions.
  (void)options;
  // END TODO(lab06)
}

void Zero2::before_backward() {
  // TODO(lab06) step 3 (before backward): the spec is in the constructor.
  // END TODO(lab06)
}

void Zero2::after_backward() {
  // TODO(lab06) step 3 (backward done): the spec is in the constructor.
  // END TODO(lab06)
}

void Zero2::step() {
  // TODO(lab06) step 3 (the update): the spec is in the constructor.
  // END TODO(lab06)
}

}  // namespace lab06
