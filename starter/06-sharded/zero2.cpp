// Lab 06, TODO 3: ZeRO-2, the gradients sharded too.
//
// Once averaged, a rank only reads its shard of the gradient, so the full gradient buffer (4 bytes
// per parameter) need not outlive backward. Same traffic as DDP and ZeRO-1.
#include "sharded.h"

namespace lab06 {

using gtl::dist::ReduceOp;

Zero2::Zero2(Communicator& comm, gtl::nn::FlatParameter& flat, gtl::optim::AdamWOptions options)
    : comm_(comm), flat_(flat) {
  // TODO(lab06) step 3a: the shard's AdamW, as in TODO 2, and this rank's gradient memory from
  //   the start. Spec: when this constructor returns the rank's allocator holds exactly the ZeRO-2
  //   formula's bytes (the handout's table; zero2-memory measures right here, before any
  //   backward). Hint: that formula counts what a rank keeps between steps; put it beside what
  //   the FlatParameter you are handed holds at this moment. About 4 lines.
  (void)options;
  // END TODO(lab06)
}

void Zero2::before_backward() {
  // TODO(lab06) step 3b: one ZeRO-2 step, over before_backward, after_backward and step().
  //   Spec: backward runs right after this returns and writes each parameter's gradient into its
  //   view of flat_.grads() (GradMode::Overwrite). When after_backward returns, the gradient the
  //   optimizer reads holds this step's gradient averaged over ranks, and no full gradient exists
  //   again until the next before_backward. When step() returns, flat_.values() are the whole
  //   updated model. The step moves exactly DDP's bytes, without an all-reduce. Hint: in TODO 2 the
  //   optimizer's gradient was a slice of the full one; find where it lives now (shard_param(),
  //   flat_parameter.h), and mind the order of your lines. About 5 lines over the three functions.
  // END TODO(lab06)
}

void Zero2::after_backward() {
  // TODO(lab06) step 3b (backward done): the spec is in before_backward.
  // END TODO(lab06)
}

void Zero2::step() {
  // TODO(lab06) step 3b (the update): the spec is in before_backward.
  // END TODO(lab06)
}

}  // namespace lab06
