// Communicator: the one interface the DDP, FSDP and pipeline labs are written against.
//
// A communicator connects `world_size` ranks; each rank holds its own Communicator object and
// every rank must call the same collectives in the same order (a collective is a rendezvous).
//
//   all_reduce(t, op)             every rank ends with op(t_0, ..., t_{N-1})       (DDP gradients)
//   reduce_scatter(in, out, op)   rank r ends with chunk r of op(in_0, ..., in_{N-1})  (FSDP grads)
//   all_gather(in, out)           every rank ends with [in_0, ..., in_{N-1}]       (FSDP params)
//   broadcast(t, root)            every rank ends with t_root                      (initial
//   weights) barrier()                     nobody leaves before everybody arrived send(t, dst) /
//   recv(t, src)   point to point                                   (pipelines)
//
// Backends (see docs/distributed.md): in-process threads (in_process.h), MPI processes
// (mpi_communicator.h), NCCL on GPUs (nccl_communicator.h). The in-process and MPI backends run
// the ring algorithms of ring.h for real, so the counters below are the bytes that actually
// crossed between ranks; the NCCL backend counts what NCCL's ring algorithm moves.
//
// CUDA tensors: collectives are ordered on current_stream() like any GPU op (the host does not
// wait for the result). The *_async variants run on the communicator's own stream, after the
// work already queued on current_stream(); Work::wait() makes current_stream() wait for them,
// which is how gradient communication overlaps the backward pass. CPU tensors: every operation
// has finished when the call returns, so an async variant returns a Work that is already done.
//
// Failures: a collective that waits longer than timeout() throws DistError naming the rank, the
// collective and the peer it waited for; a rank that fails aborts its peers (run_ranks).
#pragma once

#include <chrono>
#include <cstdint>
#include <map>
#include <memory>
#include <string>

#include "gtl/runtime/error.h"
#include "gtl/runtime/stream.h"
#include "gtl/tensor/tensor.h"

namespace gtl::dist {

enum class ReduceOp { Sum, Avg, Max, Min };
const char* reduce_op_name(ReduceOp op);

// A collective failed: timed out, aborted because a peer failed, or was called inconsistently.
class DistError : public Error {
 public:
  using Error::Error;
};

// Per-rank traffic of one kind of operation ("all_reduce", "send", ...), exact to the byte.
struct OpCounters {
  int64_t calls = 0;
  int64_t bytes_sent = 0;      // payload bytes this rank sent to its peers
  int64_t bytes_received = 0;  // payload bytes this rank received from its peers
};

// The handle of an asynchronous operation. wait(): for CUDA tensors, current_stream() waits for
// the operation (the host does not block); for CPU tensors it has already completed.
class Work {
 public:
  Work() = default;                             // completed
  static Work on_stream(const Stream& stream);  // completes when `stream` reaches this point
  void wait() const;
  bool completed() const;  // polls without blocking

 private:
  std::shared_ptr<Event> event_;
};

// Default timeout of every collective: GTL_DIST_TIMEOUT_S seconds if set, else 60 s.
std::chrono::milliseconds default_timeout();

class Communicator {
 public:
  virtual ~Communicator() = default;
  Communicator(const Communicator&) = delete;
  Communicator& operator=(const Communicator&) = delete;

  int rank() const { return rank_; }
  int world_size() const { return world_size_; }
  virtual std::string backend() const = 0;  // "in-process", "mpi", "nccl"

  // ---- collectives: tensors are contiguous; results land in place / in `output` -------------
  void all_reduce(const Tensor& tensor, ReduceOp op = ReduceOp::Sum);
  // input.numel() == world_size * output.numel(); rank r receives chunk r of the reduction.
  void reduce_scatter(const Tensor& input, const Tensor& output, ReduceOp op = ReduceOp::Sum);
  // output.numel() == world_size * input.numel(); chunk r of output is rank r's input.
  void all_gather(const Tensor& input, const Tensor& output);
  void broadcast(const Tensor& tensor, int root);
  void barrier();
  // Point to point: recv's tensor must have the shape and dtype that was sent.
  void send(const Tensor& tensor, int dst);
  void recv(const Tensor& tensor, int src);

  Work all_reduce_async(const Tensor& tensor, ReduceOp op = ReduceOp::Sum);
  Work reduce_scatter_async(const Tensor& input, const Tensor& output, ReduceOp op = ReduceOp::Sum);
  Work all_gather_async(const Tensor& input, const Tensor& output);
  Work broadcast_async(const Tensor& tensor, int root);

  // Collective over this communicator: ranks passing the same color form a new communicator,
  // ranked by (key, old rank). A negative color joins no group and returns nullptr.
  std::unique_ptr<Communicator> split(int color, int key);

  // ---- instrumentation ------------------------------------------------------------------------
  // Keyed by operation name: all_reduce, reduce_scatter, all_gather, broadcast, barrier, send,
  // recv, split. Each communicator (also each split) counts its own traffic.
  const std::map<std::string, OpCounters>& counters() const { return counters_; }
  OpCounters counters(const std::string& op) const;
  OpCounters total_counters() const;
  void reset_counters() { counters_.clear(); }

  std::chrono::milliseconds timeout() const { return timeout_; }
  void set_timeout(std::chrono::milliseconds timeout) { timeout_ = timeout; }

 protected:
  Communicator(int rank, int world_size);

  virtual void do_all_reduce(const Tensor& tensor, ReduceOp op) = 0;
  virtual void do_reduce_scatter(const Tensor& input, const Tensor& output, ReduceOp op) = 0;
  virtual void do_all_gather(const Tensor& input, const Tensor& output) = 0;
  virtual void do_broadcast(const Tensor& tensor, int root) = 0;
  virtual void do_barrier() = 0;
  virtual void do_send(const Tensor& tensor, int dst) = 0;
  virtual void do_recv(const Tensor& tensor, int src) = 0;
  virtual std::unique_ptr<Communicator> do_split(int color, int key) = 0;

  // Backends report the payload bytes of the operation in progress.
  void count_bytes(const std::string& op, int64_t sent, int64_t received);
  // "rank 2/4 (in-process)", plus the world rank in a split: the prefix of every error message.
  std::string who() const;
  void set_world_rank(int world_rank) { world_rank_ = world_rank; }
  int world_rank() const { return world_rank_ < 0 ? rank_ : world_rank_; }

 private:
  template <typename F>
  Work run_async(const Tensor& a, const Tensor& b, F&& op);

  int rank_;
  int world_size_;
  int world_rank_ = -1;  // rank in the top-level (world) communicator, for messages
  std::chrono::milliseconds timeout_;
  std::map<std::string, OpCounters> counters_;
  Stream comm_stream_;  // CUDA: the stream async operations run on (created on first use)
  bool has_comm_stream_ = false;
};

// Element-wise dst = op(dst, src) on CPU or CUDA tensors of one dtype (the reduction step of
// the ring algorithms). For 16-bit floats each step rounds once, as NCCL does.
void reduce_into(const Tensor& dst, const Tensor& src, ReduceOp op);
// dst /= n (the final step of ReduceOp::Avg); floating-point dtypes only.
void divide_(const Tensor& dst, int n);

}  // namespace gtl::dist
