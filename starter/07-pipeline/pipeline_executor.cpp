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
  //   Spec (pipeline.h, run_stage): keep one nn::Context per micro-batch (on the last stage,
  //   one loss Context per micro-batch too: GPipe holds m of them at once). For each action,
  //   work out what it must receive first (forward on s > 0: an activation
  //   [rows, input_sample...] from s-1; backward on s < p-1: a gradient
  //   [rows, output_sample...] from s+1; allocate it on step.device) and what the PREVIOUS
  //   action left to send. Same neighbour: one comm.send_recv; otherwise comm.send the old
  //   output, then comm.recv the new input. Then compute: forward (stage 0 reads
  //   images.slice(begin, end); the last stage takes the loss of its logits against
  //   labels.slice(begin, end)) or backward (last stage: dy = the loss's backward with dloss
  //   loss_weights[i]; GradMode::Overwrite for the stage's first backward, Accumulate after).
  //   Send what is left after the last action. Hint: the blocking version (send as soon as you
  //   have an output, recv when you need an input) deadlocks in the 1F1B steady state: see the
  //   test Executor.ABlockingExecutorDeadlocks... About 50 lines.
  (void)comm;
  return 0.f;
  // END TODO(lab07)
}

}  // namespace lab07
