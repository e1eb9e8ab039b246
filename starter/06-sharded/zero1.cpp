// Lab 06, TODO 2: ZeRO-1, the optimizer state sharded.
//
// AdamW's m and v are 8 of the 16 bytes a parameter costs under DDP, and each rank only needs
// them for the elements it updates: with N ranks each updates 1/N of the model, and every rank
// needs the others' updates before its next forward. Same traffic as DDP: lab 05's ring
// all-reduce has two halves, and ZeRO-1 needs each at a different moment.
#include "sharded.h"

namespace lab06 {

using gtl::dist::ReduceOp;

Zero1::Zero1(Communicator& comm, gtl::nn::FlatParameter& flat, gtl::optim::AdamWOptions options)
    : comm_(comm), flat_(flat) {
  // TODO(lab06) step 2a: optimizer_ = an AdamW whose m and v cover exactly this rank's REAL
  //   shard elements (8 bytes each, none for padding: zero1-memory is exact), or no
  //   optimizer when there are none. Hint: FlatParameter already offers the shard as a ParamRef.
  //   About 3 lines.
  (void)options;
  // END TODO(lab06)
}

void Zero1::after_backward() {
  // TODO(lab06) step 2b: the gradient this rank's optimizer reads = its average over ranks,
  //   moving half of DDP's bytes (zero1-traffic counts them). Hint: find where shard_param()'s
  //   gradient points in flat_parameter.h, then pick the collective. About 1 line.
  // END TODO(lab06)
}

void Zero1::step() {
  // TODO(lab06) step 2c: afterwards every rank's flat_.values() are the whole updated model,
  //   moving the other half of DDP's bytes. About 2 lines.
  // END TODO(lab06)
}

}  // namespace lab06
