// Communicator: the one interface the DDP, FSDP and pipeline labs are written against.
//
// A communicator connects `world_size` ranks; each rank holds its own Communicator object and
// every rank must call the same collectives in the same order (a collective is a rendezvous).
//
// clang-format off
//   all_reduce(t, op)            every rank ends with op(t_0, ..., t_{N-1})
//   reduce_scatter(in, out, op)  rank r ends with chunk r of op(in_0, ...)
//   all_gather(in, out)          every rank ends with [in_0, ..., in_{N-1}]
//   broadcast(t, root)           every rank ends with t_root
//   barrier()                    nobody leaves before everybody arrived
//   send(t, dst), recv(t, src)   point to point
//   send_recv(a, dst, b, src)    both at once: the deadlock-free pipeline/ring step
//   isend, irecv                 non-blocking point to point, completed by Work::wait()
// clang-format on
//
// Backends (see docs/distributed.md): in-process threads (in_process.h), MPI processes
// (mpi_communicator.h), NCCL on GPUs (nccl_communicator.h). The in-process and MPI backends run
// the ring algorithms of ring.h for real, so the counters below are the bytes that actually
// crossed between ranks; the NCCL backend counts what NCCL's ring algorithm moves.
//
// CUDA tensors: collectives are ordered on current_stream() like any GPU op (the host does not
// wait for the result). The *_async variants run on the communicator's own stream, after the
// work already queued on current_stream(); Work::wait() makes current_stream() wait for them,
// which is how gradient communication overlaps the backward pass. CPU tensors (in-process
// backend): the *_async variants, isend and irecv run on the communicator's progress thread
// (progress_queue.h), one at a time in issue order, and the rank blocks only in Work::wait().
// A synchronous call first waits for the async ones issued before it, so every rank executes
// its communicator's operations in the order it issued them, as on one NCCL stream.
//
// Point to point follows NCCL and large MPI messages: a send completes when the receiver has
// taken the data (in-process rendezvous mode, the default). "Everyone sends, then everyone
// receives" therefore deadlocks; send_recv() posts both halves at once and does not.
//
// Every call is recorded in trace() (trace.h) and counted in counters(). Failures: a call that
// waits longer than timeout() throws DistError naming the rank, the operation, the peer it
// waited for and (in-process) what every blocked rank is waiting for; a rank that fails aborts
// its peers (run_ranks).
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "gtl/distributed/trace.h"
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

struct WorkState;     // progress_queue.h
class ProgressQueue;  // progress_queue.h

// The handle of an asynchronous operation. wait(): for CUDA tensors, current_stream() waits for
// the operation (the host does not block); for CPU tensors the calling thread blocks until the
// operation has finished, and a failure of the operation is rethrown here. Each wait() is
// recorded in the trace as a Wait event carrying the operation's work_id.
class Work {
 public:
  Work() = default;                             // completed
  static Work on_stream(const Stream& stream);  // completes when `stream` reaches this point
  static Work on_state(std::shared_ptr<WorkState> state);  // completes with the state
  void wait() const;
  bool completed() const;                  // polls without blocking
  int64_t id() const { return work_id_; }  // the trace's work_id; -1 when not traced

 private:
  friend class Communicator;
  std::shared_ptr<Event> event_;
  std::shared_ptr<WorkState> state_;
  std::shared_ptr<Trace> trace_;
  int64_t work_id_ = -1;
};

// Default timeout of every collective: GTL_DIST_TIMEOUT_S seconds if set, else 60 s.
std::chrono::milliseconds default_timeout();

class Communicator {
 public:
  virtual ~Communicator();
  Communicator(const Communicator&) = delete;
  Communicator& operator=(const Communicator&) = delete;

  int rank() const { return rank_; }
  int world_size() const { return world_size_; }
  virtual std::string backend() const = 0;  // "in-process", "mpi", "nccl"

  // ---- collectives: tensors are contiguous; results land in place / in `output` -------------
  void all_reduce(const Tensor& tensor, ReduceOp op = ReduceOp::Sum);
  // input.numel() == world_size * output.numel(); rank r receives chunk r of the reduction.
  void reduce_scatter(const Tensor& input, const Tensor& output, ReduceOp op = ReduceOp::Sum);
  // output.numel() == world_size * input.numel(); chunk r of output is rank r's input. The input
  // may be the rank's own chunk of output (in place, as NCCL allows): nothing is copied then.
  void all_gather(const Tensor& input, const Tensor& output);
  void broadcast(const Tensor& tensor, int root);
  void barrier();
  // Point to point: recv's tensor must have the shape and dtype that was sent. send returns when
  // the receiver has taken the data (in-process rendezvous mode, NCCL, large MPI messages).
  void send(const Tensor& tensor, int dst);
  void recv(const Tensor& tensor, int src);
  // Sends to dst while receiving from src, both posted at once (NCCL: one group of ncclSend and
  // ncclRecv; MPI: MPI_Sendrecv): the deadlock-free step of a ring or a 1F1B pipeline.
  void send_recv(const Tensor& send, int dst, const Tensor& recv, int src);
  // Non-blocking point to point, executed in issue order with the communicator's other
  // operations: isend posts the message (the tensor must not change until wait()); irecv
  // receives it. Post every isend before an irecv that depends on a peer's isend.
  Work isend(const Tensor& tensor, int dst);
  Work irecv(const Tensor& tensor, int src);

  Work all_reduce_async(const Tensor& tensor, ReduceOp op = ReduceOp::Sum);
  Work reduce_scatter_async(const Tensor& input, const Tensor& output, ReduceOp op = ReduceOp::Sum);
  Work all_gather_async(const Tensor& input, const Tensor& output);
  Work broadcast_async(const Tensor& tensor, int root);

  // Collective over this communicator: ranks passing the same color form a new communicator,
  // ranked by (key, old rank). A negative color joins no group and returns nullptr.
  std::unique_ptr<Communicator> split(int color, int key);

  // ---- instrumentation ------------------------------------------------------------------------
  // Keyed by operation name: all_reduce, reduce_scatter, all_gather, broadcast, barrier, send,
  // recv, send_recv, split (isend counts as send, irecv as recv). Each communicator (also each
  // split) counts its own traffic. Async operations count when they run: read after wait().
  const std::map<std::string, OpCounters>& counters() const { return counters_; }
  OpCounters counters(const std::string& op) const;
  OpCounters total_counters() const;
  void reset_counters() { counters_.clear(); }

  std::chrono::milliseconds timeout() const { return timeout_; }
  void set_timeout(std::chrono::milliseconds timeout) { timeout_ = timeout; }

  // The rank's trace: one per world rank, shared with the communicators split from this one.
  std::shared_ptr<Trace> trace() const { return trace_; }
  void set_trace(std::shared_ptr<Trace> trace);

  // Deterministic reductions: every element's sum is taken in rank order 0..N-1 whatever the
  // chunking, so a bucketed all-reduce, or a reduce-scatter then an all-gather, is bitwise equal
  // to one flat all-reduce. In-process and MPI backends (ring.h); NCCL cannot promise it and
  // throws. Inherited by split().
  bool deterministic() const { return deterministic_; }
  void set_deterministic(bool deterministic);

  // Waits until every operation issued so far on this communicator has run (the progress
  // thread's queue is empty). Failures stay with their Work.
  void synchronize();

 protected:
  Communicator(int rank, int world_size);

  virtual void do_all_reduce(const Tensor& tensor, ReduceOp op) = 0;
  virtual void do_reduce_scatter(const Tensor& input, const Tensor& output, ReduceOp op) = 0;
  virtual void do_all_gather(const Tensor& input, const Tensor& output) = 0;
  virtual void do_broadcast(const Tensor& tensor, int root) = 0;
  virtual void do_barrier() = 0;
  virtual void do_send(const Tensor& tensor, int dst) = 0;
  virtual void do_recv(const Tensor& tensor, int src) = 0;
  virtual void do_send_recv(const Tensor& send, int dst, const Tensor& recv, int src) = 0;
  // Posts a send and returns what waits for its completion (empty: already complete).
  struct Completion {
    std::function<void()> wait;  // blocks until the receiver has the data
    std::function<bool()> done;  // polls
  };
  virtual Completion do_isend(const Tensor& tensor, int dst) {
    do_send(tensor, dst);
    return {};
  }
  virtual std::unique_ptr<Communicator> do_split(int color, int key) = 0;
  // Whether *_async calls on CPU tensors run on a progress thread (in-process) or complete
  // before they return (MPI, documented in docs/distributed.md).
  virtual bool has_progress_thread() const { return false; }
  virtual bool supports_deterministic() const { return true; }
  // Backends with a progress thread call this first in their destructor: it runs what is queued
  // while the backend still exists.
  void stop_progress_thread();

  // Backends report the payload bytes of the operation in progress (counters and trace).
  void count_bytes(const std::string& op, int64_t sent, int64_t received);
  // ... and the peers (ranks of this communicator) it exchanged data with (trace).
  void note_peer(int peer);
  // World ranks of this communicator's ranks (default 0..N-1); split backends set them.
  void set_group_world_ranks(std::vector<int> world_ranks);
  const std::vector<int>& group_world_ranks() const { return group_world_ranks_; }
  // "rank 2/4 (in-process)", plus the world rank in a split: the prefix of every error message.
  std::string who() const;
  void set_world_rank(int world_rank) { world_rank_ = world_rank; }
  int world_rank() const { return world_rank_ < 0 ? rank_ : world_rank_; }

 private:
  // Records a call in the trace; returns its sequence number (-1 when tracing is off).
  int64_t trace_call(TraceKind kind, const std::string& op, int64_t bytes, std::vector<int> peers,
                     bool async, int64_t work_id);
  // Runs `body` as operation `op` (counted, and traced as event `seq`) on this thread, after
  // the operations already queued on the progress thread.
  void run_now(const std::string& op, int64_t seq, const std::function<void()>& body);
  // The async variant: on the progress thread (CPU tensors, in-process), on the communicator's
  // stream (CUDA), or now (other backends). `body` returns a completion to wait for, if any.
  Work run_async(TraceKind kind, const std::string& trace_op, const std::string& count_op,
                 int64_t bytes, std::vector<int> peers, const Tensor& a, const Tensor& b,
                 std::function<Completion()> body);
  void execute(const std::string& op, int64_t seq, const std::shared_ptr<Trace>& trace,
               const std::function<void()>& body);
  void reduce_scatter_body(const Tensor& input, const Tensor& output, ReduceOp op);
  void all_gather_body(const Tensor& input, const Tensor& output);
  void check_broadcast(const Tensor& tensor, int root) const;
  void check_peer(const Tensor& tensor, int peer, const char* op, const char* role) const;

  int rank_;
  int world_size_;
  int world_rank_ = -1;  // rank in the top-level (world) communicator, for messages
  std::chrono::milliseconds timeout_;
  std::map<std::string, OpCounters> counters_;
  Stream comm_stream_;  // CUDA: the stream async operations run on (created on first use)
  bool has_comm_stream_ = false;
  std::unique_ptr<ProgressQueue> queue_;  // CPU async (in-process): created on first use
  std::shared_ptr<Trace> trace_;
  std::vector<int> group_world_ranks_;
  int64_t group_seq_ = 0;                // collectives issued so far (the trace's group_seq)
  int64_t active_seq_ = -1;              // trace event of the operation being executed
  std::shared_ptr<Trace> active_trace_;  // ... and the trace it is in
  bool deterministic_ = false;
  std::mutex counters_mutex_;  // the progress thread counts while the rank's thread issues
};

// Element-wise dst = op(dst, src) on CPU or CUDA tensors of one dtype (the reduction step of
// the ring algorithms). For 16-bit floats each step rounds once, as NCCL does.
void reduce_into(const Tensor& dst, const Tensor& src, ReduceOp op);
// dst /= n (the final step of ReduceOp::Avg); floating-point dtypes only.
void divide_(const Tensor& dst, int n);

}  // namespace gtl::dist
