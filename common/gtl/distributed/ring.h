// Ring collectives over any point-to-point transport: the algorithms behind the in-process and
// MPI backends (and, in spirit, NCCL's ring).
//
// The ranks form a ring r -> r+1 -> ... -> r-1 -> r. A buffer of B bytes is cut into N chunks
// (chunk i holds elements [i*n/N, (i+1)*n/N)).
//
//   reduce-scatter  N-1 steps; in step s rank r sends chunk (r-s) to r+1 and adds the chunk
//                   (r-s-1) coming from r-1 into its own copy. Afterwards rank r holds chunk r+1
//                   reduced over all ranks. Traffic per rank: (N-1)/N * B sent and received.
//   all-gather      N-1 more steps passing the finished chunks around: again (N-1)/N * B.
//   all-reduce      reduce-scatter + all-gather: 2(N-1)/N * B per rank, independent of N for
//                   large N. That is why the ring is bandwidth-optimal, and why nccl-tests
//                   report "bus bandwidth" = algorithm bandwidth * 2(N-1)/N.
//   broadcast       a pipelined chain root -> root+1 -> ...: each rank but the last forwards B.
//   barrier         a zero-byte token goes twice around the ring (arrive, then release).
//
// Deterministic mode (Communicator::set_deterministic) replaces the reduce-scatter half by a
// direct exchange: every rank posts its chunk for owner q to q (all N-1 sends at once), and the
// owner accumulates in rank order, acc = x0; acc += x1; ...; acc += x(N-1), so an element's sum
// no longer depends on which rank owns its chunk: a bucketed or sharded reduction is bitwise
// equal to a flat one. The traffic is the ring's: (N-1)/N * B per phase.
//
// reduce_scatter itself is a pairwise exchange (step s: send my chunk for r+s to it, receive
// r-s's contribution to my chunk and add it into `output`), so it needs no copy of the input;
// deterministic mode uses the rank-ordered exchange above.
//
// When n is not a multiple of N the chunks differ by one element; the counters then show the
// exact bytes of the chunks each rank sent (see docs/distributed.md for the formula).
#pragma once

#include "gtl/distributed/communicator.h"

namespace gtl::dist {

class RingCommunicator : public Communicator {
 public:
  // A send in flight: the chunk must not change until complete_send() has returned.
  struct PostedSend {
    virtual ~PostedSend() = default;
  };

 protected:
  using Communicator::Communicator;

  // ---- the transport a backend provides; each call counts its payload bytes under `op` -------
  // Starts sending `chunk` to `peer` without waiting for the receiver.
  virtual std::shared_ptr<PostedSend> post_send(const Tensor& chunk, int peer,
                                                const std::string& op) = 0;
  // Waits until the receiver has the data (a second call returns at once).
  virtual void complete_send(PostedSend& send) = 0;
  virtual bool send_completed(PostedSend& send) = 0;  // polls
  // Receives from `peer` into `dst`: a copy, or dst = reduce(dst, received) when reduce is set.
  virtual void recv_chunk(const Tensor& dst, int peer, const ReduceOp* reduce,
                          const std::string& op) = 0;
  // Sends `chunk` to `peer` and waits until the receiver has it.
  void send_chunk(const Tensor& chunk, int peer, const std::string& op) {
    complete_send(*post_send(chunk, peer, op));
  }
  // One ring step: send to one neighbour while receiving from the other, both in flight at once
  // (with rendezvous sends, a send then a receive would deadlock the ring).
  virtual void exchange(const Tensor& send, int send_peer, const Tensor& dst, int recv_peer,
                        const ReduceOp* reduce, const std::string& op) {
    const std::shared_ptr<PostedSend> posted = post_send(send, send_peer, op);
    recv_chunk(dst, recv_peer, reduce, op);
    complete_send(*posted);
  }

  void do_all_reduce(const Tensor& tensor, ReduceOp op) override;
  void do_reduce_scatter(const Tensor& input, const Tensor& output, ReduceOp op) override;
  void do_all_gather(const Tensor& input, const Tensor& output) override;
  void do_broadcast(const Tensor& tensor, int root) override;
  void do_barrier() override;
  void do_send(const Tensor& tensor, int dst) override { send_chunk(tensor, dst, "send"); }
  void do_recv(const Tensor& tensor, int src) override { recv_chunk(tensor, src, nullptr, "recv"); }
  void do_send_recv(const Tensor& send, int dst, const Tensor& recv, int src) override {
    exchange(send, dst, recv, src, nullptr, "send_recv");
  }
  Completion do_isend(const Tensor& tensor, int dst) override;

  // The two halves of the ring all-reduce on a flat tensor. `shift` rotates the chunk schedule:
  // after ring_reduce_scatter rank r owns chunk (r + 1 + shift) mod N, and ring_all_gather
  // starts from that chunk.
  void ring_reduce_scatter(const Tensor& flat, ReduceOp op, int shift, const std::string& name);
  void ring_all_gather(const Tensor& flat, int shift, const std::string& name);
  // Direct reduce-scatters of a flat tensor into `acc` (chunk r's elements): in rank order
  // (deterministic) or in arrival order (pairwise steps).
  void ordered_reduce_scatter(const Tensor& flat, const Tensor& acc, ReduceOp op,
                              const std::string& name);
  void pairwise_reduce_scatter(const Tensor& flat, const Tensor& acc, ReduceOp op,
                               const std::string& name);
  Tensor chunk(const Tensor& flat, int index) const;  // chunk index mod N of a flat tensor
};

}  // namespace gtl::dist
