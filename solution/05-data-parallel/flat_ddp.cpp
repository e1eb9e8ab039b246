// Lab 05, TODO 4: flat DDP, one all-reduce over the flat gradient buffer.
//
// One call instead of one per parameter: the latency is paid once and the ring moves one large
// buffer at full bandwidth. Still nothing overlaps the backward pass (TODO 5 does that).
#include "data_parallel.h"

namespace lab05 {

void flat_ddp_sync(Communicator& comm, const gtl::nn::ParameterBuffer& buffer) {
  // SOLUTION(lab05) step 4: the average over ranks of the whole flat gradient, in one all-reduce.
  comm.all_reduce(buffer.grads(), gtl::dist::ReduceOp::Avg);
  // END SOLUTION(lab05)
}

}  // namespace lab05
