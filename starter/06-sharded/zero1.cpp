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
  // TODO(lab06) step 2: one ZeRO-1 step, over this constructor, after_backward and step().
  //   Spec (sharded.h section 2): the optimizer's m and v cover exactly this rank's REAL shard
  //   elements, 8 bytes each (zero1-memory is exact; a rank whose shard is all padding has no
  //   optimizer). When after_backward returns, the gradient the optimizer reads holds this step's
  //   gradient averaged over ranks; when step() returns, every rank's flat_.values() are the whole
  //   updated model. The step moves exactly DDP's bytes, without an all-reduce. Decide which
  //   collective runs in each function, and which buffers it reads and writes. About 6 lines over
  //   the three functions.
  (void)options;
  // END TODO(lab06)
}

void Zero1::after_backward() {
  // TODO(lab06) step 2 (backward done): the spec is in the constructor.
  // END TODO(lab06)
}

void Zero1::step() {
  // TODO(lab06) step 2 (the update): the spec is in the constructor.
  // END TODO(lab06)
}

}  // namespace lab06
