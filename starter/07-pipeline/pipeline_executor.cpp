// Lab 07, TODO 5: the executor: one stage runs its schedule, passing activations forward and
// gradients backward by point to point.
//
// Why send_recv: a send completes only when the receiver takes the data (NCCL, large MPI
// messages, this course's rendezvous mode). In 1F1B's steady state stage s sends micro-batch
// i's activation to s+1 and then needs a gradient from s+1, while s+1 has just sent that
// gradient and needs s's next activation: with "send, then recv" on both sides each waits in its
// send for the other. Posting both halves at once (send_recv: ncclGroupStart / ncclSend /
// ncclRecv / ncclGroupEnd, MPI_Sendrecv) cannot deadlock.
#include <optional>

#include "gtl/nn/cross_entropy.h"
#include "gtl/runtime/error.h"
#include "pipeline.h"

namespace lab07 {

float run_stage(Communicator& comm, const StageStep& step) {
  GTL_CHECK(step.layers != nullptr, "run_stage: no layers");
  GTL_CHECK(step.loss_weights.size() == step.micro_batches.size(),
            "run_stage: " << step.loss_weights.size() << " loss weights for "
                          << step.micro_batches.size() << " micro-batches");
  // TODO(lab07) step 5: run the actions; pair a send with the next receive from the same peer.
  //   Spec (pipeline.h, run_stage): what each action receives, computes and sends; the
  //   send_recv pairing rule (the traffic test counts the pairs); every micro-batch's state
  //   (its nn::Context, on the last stage its loss's too) lives from its forward to its
  //   backward only (the memory test counts what you hold).
  //   Yours to decide: the control structure that lets a send wait until you know whether the
  //   next action receives from the same neighbour, and where each micro-batch's state lives.
  //   Hint: the blocking version (send as soon as you have an output, recv when you need an
  //   input) deadlocks in the 1F1B steady state: run Executor.ABlockingExecutorDeadlocks...
  //   and read its table of who waits for whom. About 50 lines.
  (void)comm;
  return 0.f;
  // END TODO(lab07)
}

}  // namespace lab07
