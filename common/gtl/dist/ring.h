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
// When n is not a multiple of N the chunks differ by one element; the counters then show the
// exact bytes of the chunks each rank sent (see docs/distributed.md for the formula).
#pragma once

#include "gtl/dist/communicator.h"

namespace gtl::dist {

class RingCommunicator : public Communicator {
 protected:
  using Communicator::Communicator;

  // ---- the transport a backend provides; each call counts its payload bytes under `op` -------
  // Sends `chunk` to `peer`. The chunk may be overwritten once this returns.
  virtual void send_chunk(const Tensor& chunk, int peer, const std::string& op) = 0;
  // Receives from `peer` into `dst`: a copy, or dst = reduce(dst, received) when reduce is set.
  virtual void recv_chunk(const Tensor& dst, int peer, const ReduceOp* reduce,
                          const std::string& op) = 0;
  // One ring step: send to one neighbour while receiving from the other. The default (send,
  // then receive) needs a buffered send; MPI overrides it with non-blocking calls.
  virtual void exchange(const Tensor& send, int send_peer, const Tensor& dst, int recv_peer,
                        const ReduceOp* reduce, const std::string& op) {
    send_chunk(send, send_peer, op);
    recv_chunk(dst, recv_peer, reduce, op);
  }

  void do_all_reduce(const Tensor& tensor, ReduceOp op) override;
  void do_reduce_scatter(const Tensor& input, const Tensor& output, ReduceOp op) override;
  void do_all_gather(const Tensor& input, const Tensor& output) override;
  void do_broadcast(const Tensor& tensor, int root) override;
  void do_barrier() override;
  void do_send(const Tensor& tensor, int dst) override { send_chunk(tensor, dst, "send"); }
  void do_recv(const Tensor& tensor, int src) override { recv_chunk(tensor, src, nullptr, "recv"); }

  // The two halves of the ring all-reduce on a flat tensor. `shift` rotates the chunk schedule:
  // after ring_reduce_scatter rank r owns chunk (r + 1 + shift) mod N, and ring_all_gather
  // starts from that chunk.
  void ring_reduce_scatter(const Tensor& flat, ReduceOp op, int shift, const std::string& name);
  void ring_all_gather(const Tensor& flat, int shift, const std::string& name);
  Tensor chunk(const Tensor& flat, int index) const;  // chunk index mod N of a flat tensor
};

}  // namespace gtl::dist
