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
  // SOLUTION(lab07) step 5: run the actions; pair a send with the next receive from the same peer.
  const int s = comm.rank(), p = comm.world_size();
  const bool first = s == 0, last = s == p - 1;
  const std::size_t m = step.micro_batches.size();
  const gtl::nn::CrossEntropyLoss head;
  auto rows_of = [](int64_t rows, const Shape& sample) {
    Shape shape = sample;
    shape.insert(shape.begin(), rows);
    return shape;
  };
  std::vector<gtl::nn::Context> ctx(m), loss_ctx(m);
  std::vector<float> losses(m, 0.f);
  struct Message {
    Tensor tensor;
    int peer = -1;
  };
  std::optional<Message> pending;  // the previous action's output, not sent yet
  bool first_backward = true;
  for (const Action& a : step.actions) {
    const auto i = static_cast<std::size_t>(a.micro_batch);
    const MicroBatch& mb = step.micro_batches[i];
    const bool forward = a.op == Op::Forward;
    // What this action receives first: an activation from s-1, or a gradient from s+1.
    std::optional<Message> in;
    if (forward && !first) {
      in = Message{
          Tensor::empty(rows_of(mb.size(), step.input_sample), gtl::DType::Float32, step.device),
          s - 1};
    } else if (!forward && !last) {
      in = Message{
          Tensor::empty(rows_of(mb.size(), step.output_sample), gtl::DType::Float32, step.device),
          s + 1};
    }
    if (pending && in && pending->peer == in->peer) {
      comm.send_recv(pending->tensor, pending->peer, in->tensor, in->peer);
    } else {
      if (pending) comm.send(pending->tensor, pending->peer);
      if (in) comm.recv(in->tensor, in->peer);
    }
    pending.reset();
    if (forward) {
      Tensor x = first ? step.images.slice(mb.begin, mb.end) : in->tensor;
      Tensor y = step.layers->forward(x, ctx[i]);
      if (last) {
        losses[i] = head.forward(y, step.labels.slice(mb.begin, mb.end), loss_ctx[i]).item();
      } else {
        pending = Message{y, s + 1};
      }
    } else {
      Tensor dy = last ? head.backward(loss_ctx[i], step.loss_weights[i]) : in->tensor;
      Tensor dx = step.layers->backward(
          ctx[i], dy,
          first_backward ? gtl::nn::GradMode::Overwrite : gtl::nn::GradMode::Accumulate);
      first_backward = false;
      if (!first) pending = Message{dx, s - 1};
    }
  }
  if (pending) comm.send(pending->tensor, pending->peer);
  float loss = 0.f;
  if (last) {
    for (std::size_t i = 0; i < m; ++i) loss += step.loss_weights[i] * losses[i];
  }
  return loss;
  // END SOLUTION(lab07)
}

}  // namespace lab07
