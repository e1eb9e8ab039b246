// Timeline: a deterministic cost model that turns the traces of all ranks (trace.h) into a
// simulated per-rank timeline, and its export to the Chrome trace format (Perfetto,
// chrome://tracing).
//
//   std::vector<std::vector<TraceEvent>> traces = ...;   // index = world rank
//   Timeline tl = simulate_timeline(traces, CostModel{});
//   tl.step_time();  tl.ranks[1].bubble_fraction;  tl.ranks[0].hidden_comm_fraction;
//   write_chrome_trace(tl, "step.json");                 // open it in ui.perfetto.dev
//
// Why a model and not timers: labs 05-07 grade how well communication hides behind compute and
// how large a pipeline's bubble is, on machines without GPUs, where measured times say nothing.
// The ORDER of what each rank did is exact on any machine (the trace); the times below are a
// pure function of that order and of CostModel, so the same traces give the same numbers,
// bit for bit, everywhere.
//
// THE MODEL. Each rank has two streams, as a GPU rank does: a compute stream and a
// communication stream. Both start at time 0.
//
// Compute. A LEAF module's pass (ModuleBegin ... ModuleEnd with leaf set) is compute work of
//     time = max(flops / peak_flops, mem_bytes / mem_bandwidth)      (the roofline)
// with flops and mem_bytes taken from its ModuleEnd. It runs on the compute stream when the
// rank reaches its ModuleBegin (so a collective a leaf issues inside its pass, as tensor
// parallelism does, comes after its compute). Compute work runs one after another in seq order.
// Non-leaf modules (a Sequential, a block) are spans for display only: they cost nothing.
//
// Communication. Every collective and point-to-point call is one operation on the rank's
// communication stream, which runs them in the order the rank issued them (NCCL's stream does
// the same: a trace whose order would deadlock NCCL throws here). An operation is ISSUED at the
// rank's compute-stream time when the rank reaches it in seq order, and is READY on the rank at
// max(issue time, end of the rank's previous communication operation).
//   - A collective is matched across ranks by (group, group_seq). It starts at the max over its
//     members of their ready times and ends at the same time on all of them:
//         duration = steps * alpha + wire_bytes / bandwidth
//     with the ring's steps (N = group size; ring.h):
//         all_reduce      2(N-1) steps, wire_bytes = max over members of bytes_sent
//         reduce_scatter  N-1 steps,    wire_bytes = max over members of bytes_sent
//         all_gather      N-1 steps,    wire_bytes = max over members of bytes_sent
//         split           as all_gather (the in-process split gathers every rank's color, key)
//         broadcast       a chain pipelined in k = ceil(S / 1 MiB) pieces (S = max bytes_sent):
//                         N+k-2 steps, wire_bytes = S (N+k-2) / k  (the last piece leaves the
//                         root after k pieces, then crosses N-2 more links)
//         barrier         a token twice around the ring: 2N steps, 0 bytes
//     and 0 for N = 1. alpha and bandwidth are those of the slowest link in the group: the
//     inter-node link when the group spans nodes (node = world rank / ranks_per_node), else the
//     intra-node link.
//   - Point to point: the k-th send from src to dst (send, isend, or the send half of send_recv)
//     is matched with the k-th receive on dst from src (recv, irecv, the receive half of
//     send_recv). peers lists dst then src: send/isend {dst}, recv/irecv {src}, send_recv
//     {dst, src}. The transfer starts when both sides' operations are ready (a rendezvous) and
//     lasts alpha + bytes / bandwidth over the link between the two ranks, bytes being the
//     sender's bytes_sent (its `bytes` when bytes_sent is 0). A send_recv's two transfers run at
//     the same time (links are full duplex); the operation ends when both have.
// Blocking. A synchronous collective, send, recv or send_recv blocks the rank's compute stream
// until it ends; an async one (async set: *_async, isend, irecv) does not, and the compute
// stream blocks only at the Wait with its work_id. Time blocked is idle-wait time.
//
// OUTPUTS, per rank: intervals on each stream; end_time (when both streams are done);
//   compute_busy    sum of compute work;  comm_busy: sum of communication operations
//   exposed_comm    communication time not overlapped by compute on that rank
//   hidden_comm_fraction = 1 - exposed_comm / comm_busy   (1 when there is no communication)
//   idle            step_time - compute_busy: the compute stream's idle-wait intervals, plus its
//                   idle tail from its last work to the end of the step
//   bubble_fraction = idle / step_time;  step_time = max over ranks of end_time.
// For the GPipe schedule with p stages, m micro-batches, equal costs and free links, every rank's
// bubble_fraction is exactly (p-1)/(m+p-1).
//
// INCONSISTENT TRACES throw gtl::Error naming the rank, the op and its seq: a collective that a
// member never issued or issued as another op, a send without its receive (or the reverse), a
// Wait of an unknown work_id, unbalanced module events, and communication issued in an order
// that deadlocks. It never hangs and never returns a partial timeline.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "gtl/distributed/trace.h"

namespace gtl::dist {

// A link between two ranks, alpha-beta: a message of b bytes takes alpha + b / bandwidth.
struct Link {
  double alpha_s = 0;    // latency per message or ring step, seconds
  double bandwidth = 0;  // bytes per second, per direction (may be infinity: a free link)
};

struct CostModel {
  // The H100 figures the course uses: the FP32 SGEMM rate, the BF16 tensor-core rate, and the
  // device-to-device copy rate (bytes read + bytes written per second). Set peak_flops to the
  // rate of the precision being modelled.
  static constexpr double kH100Fp32Flops = 50.4e12;
  static constexpr double kH100Bf16Flops = 667e12;
  static constexpr double kH100MemBandwidth = 2972e9;

  double peak_flops = kH100Fp32Flops;
  double mem_bandwidth = kH100MemBandwidth;
  Link intra_node{3e-6, 450e9};  // NVLink 4: about 450 GB/s per direction
  Link inter_node{5e-6, 50e9};   // 400 Gb/s InfiniBand
  int ranks_per_node = 8;

  double compute_time(double flops, double mem_bytes) const;
  // The link between two world ranks; a group's link: inter_node when it spans nodes.
  const Link& link(int rank_a, int rank_b) const;
  const Link& group_link(const std::vector<int>& group) const;
};

// Not `Stream`: gtl::Stream is the CUDA stream, and a gtl::dist::Stream would change what
// `Stream` means in every gtl::dist header a file includes after this one (the communicator's
// layout among them: a one-definition-rule violation that crashed a lab's test).
enum class TimelineStream { Compute, Communication };
enum class Category {
  Compute,        // a leaf module's work (compute stream)
  Communication,  // a collective or point-to-point operation (communication stream)
  IdleWait,       // the compute stream blocked on communication, or idle at the end of the step
  Module,         // a non-leaf module's span, for display only (compute stream, costs nothing)
};
const char* stream_name(TimelineStream stream);
const char* category_name(Category category);

struct Interval {
  TimelineStream stream = TimelineStream::Compute;
  Category category = Category::Compute;
  std::string name;  // "backward 2.fc1", "all_reduce", "wait all_reduce", "recv from 0"
  double start = 0;  // seconds from the start of the step
  double end = 0;
  // Where it came from: the trace event's op, module and payload bytes, and its seq (a leaf's
  // ModuleEnd, which carries its work; -1 for the idle tail at the end of the step).
  std::string op;
  std::string module;
  int64_t bytes = 0;
  int64_t seq = -1;

  double duration() const { return end - start; }
};

struct RankTimeline {
  std::vector<Interval> intervals;  // per stream, by start time (an enclosing span first)
  double end_time = 0;
  double compute_busy = 0;
  double comm_busy = 0;
  double exposed_comm = 0;
  double idle = 0;
  double hidden_comm_fraction = 1;
  double bubble_fraction = 0;
};

struct Summary {
  double mean = 0, min = 0, max = 0;
};

// Whole-world summaries of the per-rank figures.
struct WorldSummary {
  Summary end_time, compute_busy, comm_busy, exposed_comm, idle, hidden_comm_fraction,
      bubble_fraction;
};

struct Timeline {
  std::vector<RankTimeline> ranks;  // index = world rank
  // Each rank's process name in the Chrome trace; "rank r" where empty or missing (a timeline
  // drawn by hand may name its processes otherwise: "stage 2 (world rank 16)").
  std::vector<std::string> names;

  double step_time() const;  // max over ranks of end_time (0 for no ranks)
  WorldSummary world() const;
};

// Simulates one step from the traces of all world ranks (index = world rank). Throws gtl::Error
// for an inconsistent or deadlocking trace (see the top of this file).
Timeline simulate_timeline(const std::vector<std::vector<TraceEvent>>& traces,
                           const CostModel& model = CostModel{});

// The Chrome trace format (JSON object form): one process per rank (pid = rank, named "rank r"
// or by Timeline::names), one thread per stream (tid 0 compute, 1 communication), named by
// metadata events; one "X" complete event per interval, ts and dur in microseconds, args {op,
// module, bytes, seq}.
std::string to_chrome_trace(const Timeline& timeline);
void write_chrome_trace(const Timeline& timeline, const std::string& path);

}  // namespace gtl::dist
