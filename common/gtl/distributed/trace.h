// Trace: what one rank did, in the order it did it: every collective and point-to-point call of
// its communicators, every wait on an asynchronous one, and the forward/backward of each module
// (recorded by hooks, module_trace.h). Tests read it through this plain API; the cost model
// (timeline.h) turns the traces of all ranks into a simulated timeline.
//
//   seq  op               kind         bytes    peers   module
//   0    forward          ModuleBegin  0        -       "0"
//   ...
//   7    backward         ModuleEnd    0        -       "2"
//   8    all_reduce       Collective   4096     0,1,2   (async, work 0)
//   9    backward         ModuleBegin  0        -       "1"
//   ...
//   14   wait             Wait                          (work 0)
//
// Why a trace and not timers: the labs grade overlap, issue order and pipeline bubbles without a
// GPU. The order of events on each rank is exact on any machine; a deterministic cost model then
// gives the same simulated times everywhere.
#pragma once

#include <cstdint>
#include <mutex>
#include <string>
#include <vector>

namespace gtl::dist {

enum class TraceKind {
  Collective,    // all_reduce, reduce_scatter, all_gather, broadcast, barrier (sync or async)
  PointToPoint,  // send, recv, send_recv, isend, irecv
  Wait,          // Work::wait() of an asynchronous operation (work_id names it)
  ModuleBegin,   // a module's forward or backward starts (op: "forward" / "backward")
  ModuleEnd,     // ... and ends
};
const char* trace_kind_name(TraceKind kind);

struct TraceEvent {
  int64_t seq = 0;  // per-rank sequence number: 0, 1, 2, ... in the order the rank did them
  TraceKind kind = TraceKind::Collective;
  std::string op;  // "all_reduce", "send", "send_recv", "wait", "forward", "backward", ...

  // Communication (Collective, PointToPoint, Wait).
  int64_t bytes = 0;           // payload size: the tensor (all_reduce), the input (all_gather,
                               // reduce_scatter: the larger buffer), the message (p2p)
  int64_t bytes_sent = 0;      // exactly what this rank sent to peers for this call
  int64_t bytes_received = 0;  // exactly what this rank received for this call
  std::vector<int> peers;      // world ranks data went to or came from (p2p: dst then src)
  std::vector<int> group;      // world ranks of the communicator (collectives)
  int64_t group_seq = -1;      // collectives: n-th collective of this communicator (matches
                               // across ranks: the same number is the same collective)
  bool async = false;          // issued by an *_async / isend / irecv call
  int64_t work_id = -1;        // async ops and their Wait: the same id (per rank)

  // Modules (ModuleBegin, ModuleEnd).
  std::string module;       // path in the model: "", "0", "2.fc1"
  std::string module_kind;  // "linear", "sequential", ...
  bool leaf = false;        // no children: its compute is its own
  double flops = 0;         // ModuleEnd of a leaf: floating-point operations of this pass
  double mem_bytes = 0;     // ModuleEnd of a leaf: bytes this pass reads and writes
};

// Thread-safe: an asynchronous collective completes on a progress thread and records its bytes
// there. Events are kept in seq order.
class Trace {
 public:
  bool enabled() const;
  void set_enabled(bool enabled);  // on by default

  // Appends `event` with the next sequence number and returns that number.
  int64_t record(TraceEvent event);
  // Adds traffic to an event already recorded (async ops learn their bytes when they finish).
  void add_bytes(int64_t seq, int64_t sent, int64_t received);
  // Adds a world rank to an event's peers unless it is there already (collectives learn their
  // peers as they run: ring neighbours, or every rank for a direct exchange).
  void add_peer(int64_t seq, int peer);
  int64_t next_work_id();

  std::vector<TraceEvent> events() const;  // a copy, in seq order
  // Only the events of one kind / of one op name ("all_reduce"), in seq order.
  std::vector<TraceEvent> events(TraceKind kind) const;
  std::vector<TraceEvent> events(const std::string& op) const;
  void clear();

 private:
  mutable std::mutex mutex_;
  std::vector<TraceEvent> events_;
  int64_t next_work_id_ = 0;
  bool enabled_ = true;
};

}  // namespace gtl::dist
