// The cost model of timeline.h on traces written by hand, each expected number worked out here
// from the model's formulas. Most tests use a cost model of round binary numbers (1 flop/s,
// links of alpha 0.25 s and 4 B/s) so that every time is exact in floating point and compared
// with ==; the H100 and InfiniBand figures are checked with the default model.
#include <cstdio>
#include <fstream>
#include <limits>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>
#include <vector>

#include "gtl/distributed/timeline.h"
#include "gtl/runtime/error.h"
#include "gtl_test.h"

namespace gtl::dist {
namespace {

// One rank's trace, written event by event (seq numbers follow the order).
class TraceBuilder {
 public:
  // A leaf module's pass: ModuleBegin, then a ModuleEnd carrying its work.
  TraceBuilder& leaf(const std::string& op, const std::string& module, double flops,
                     double mem_bytes = 0) {
    module_event(TraceKind::ModuleBegin, op, module, true);
    TraceEvent& end = module_event(TraceKind::ModuleEnd, op, module, true);
    end.flops = flops;
    end.mem_bytes = mem_bytes;
    return *this;
  }
  // A non-leaf module's span (a Sequential): display only.
  TraceBuilder& begin(const std::string& op, const std::string& module) {
    module_event(TraceKind::ModuleBegin, op, module, false);
    return *this;
  }
  TraceBuilder& end(const std::string& op, const std::string& module) {
    module_event(TraceKind::ModuleEnd, op, module, false);
    return *this;
  }
  TraceBuilder& collective(const std::string& op, std::vector<int> group, int64_t group_seq,
                           int64_t bytes_sent, int64_t work_id = -1) {
    TraceEvent& e = push(TraceKind::Collective, op);
    e.bytes = e.bytes_sent = e.bytes_received = bytes_sent;
    e.peers = e.group = std::move(group);
    e.group_seq = group_seq;
    e.async = work_id >= 0;
    e.work_id = work_id;
    return *this;
  }
  // send / isend: peers {dst}; recv / irecv: peers {src}; send_recv: peers {dst, src}.
  TraceBuilder& p2p(const std::string& op, std::vector<int> peers, int64_t bytes,
                    int64_t work_id = -1) {
    TraceEvent& e = push(TraceKind::PointToPoint, op);
    e.bytes = bytes;
    if (op != "recv" && op != "irecv") e.bytes_sent = bytes;
    if (op != "send" && op != "isend") e.bytes_received = bytes;
    e.peers = std::move(peers);
    e.async = work_id >= 0;
    e.work_id = work_id;
    return *this;
  }
  TraceBuilder& wait(int64_t work_id) {
    push(TraceKind::Wait, "wait").work_id = work_id;
    return *this;
  }
  std::vector<TraceEvent> events() const { return events_; }

 private:
  TraceEvent& push(TraceKind kind, const std::string& op) {
    TraceEvent e;
    e.seq = static_cast<int64_t>(events_.size());
    e.kind = kind;
    e.op = op;
    events_.push_back(e);
    return events_.back();
  }
  TraceEvent& module_event(TraceKind kind, const std::string& op, const std::string& module,
                           bool leaf) {
    TraceEvent& e = push(kind, op);
    e.module = module;
    e.module_kind = leaf ? "linear" : "sequential";
    e.leaf = leaf;
    return e;
  }
  std::vector<TraceEvent> events_;
};

// 1 flop per second: a leaf of f flops takes f seconds. Every link: alpha 0.25 s, 4 bytes/s.
CostModel round_model() {
  CostModel m;
  m.peak_flops = 1;
  m.mem_bandwidth = 1;
  m.intra_node = m.inter_node = Link{0.25, 4};
  return m;
}

std::vector<Interval> of_category(const RankTimeline& rank, Category category) {
  std::vector<Interval> out;
  for (const Interval& iv : rank.intervals) {
    if (iv.category == category) out.push_back(iv);
  }
  return out;
}

std::string error_of(const std::vector<std::vector<TraceEvent>>& traces) {
  try {
    simulate_timeline(traces, round_model());
  } catch (const Error& e) {
    return e.what();
  }
  return "(no error)";
}

TEST(Timeline, OneRankComputeOnlyIsTheSumOfItsRooflineCosts) {
  const CostModel h100;  // the default model: H100 FP32
  // Two compute-bound GEMMs and one memory-bound elementwise pass, inside a Sequential.
  const double f1 = 2.0 * 4096 * 4096 * 4096, f2 = 2.0 * 4096 * 1024 * 4096;
  const double eltwise_flops = 4096.0 * 4096, eltwise_bytes = 2 * 4096.0 * 4096 * 4;
  TraceBuilder t;
  t.begin("forward", "")
      .leaf("forward", "0", f1)
      .leaf("forward", "1", eltwise_flops, eltwise_bytes);
  t.leaf("forward", "2", f2).end("forward", "");
  const Timeline tl = simulate_timeline({t.events()}, h100);

  // time = max(flops / peak, bytes / bandwidth), one after another on the compute stream.
  const double c0 = f1 / CostModel::kH100Fp32Flops;
  const double c1 = eltwise_bytes / CostModel::kH100MemBandwidth;  // memory-bound
  const double c2 = f2 / CostModel::kH100Fp32Flops;
  ASSERT_GT(c1, eltwise_flops / CostModel::kH100Fp32Flops) << "the test wants a memory-bound pass";
  EXPECT_EQ(tl.step_time(), c0 + c1 + c2) << "one rank, compute only: step time = sum of costs";
  const RankTimeline& r = tl.ranks[0];
  EXPECT_EQ(r.compute_busy, c0 + c1 + c2);
  EXPECT_EQ(r.bubble_fraction, 0) << "a rank that never waits has no bubble";
  EXPECT_EQ(r.comm_busy, 0);
  EXPECT_EQ(r.hidden_comm_fraction, 1) << "no communication counts as all hidden";

  const std::vector<Interval> work = of_category(r, Category::Compute);
  ASSERT_EQ(work.size(), 3u) << "one compute interval per leaf pass";
  EXPECT_EQ(work[1].name, "forward 1");
  EXPECT_EQ(work[1].start, c0);
  EXPECT_EQ(work[1].end, c0 + c1);
  const std::vector<Interval> spans = of_category(r, Category::Module);
  ASSERT_EQ(spans.size(), 1u) << "the Sequential is one display span";
  EXPECT_EQ(spans[0].start, 0);
  EXPECT_EQ(spans[0].end, c0 + c1 + c2)
      << "a non-leaf span encloses its children and costs nothing";

  CostModel bf16 = h100;
  bf16.peak_flops = CostModel::kH100Bf16Flops;
  EXPECT_EQ(simulate_timeline({t.events()}, bf16).ranks[0].compute_busy,
            f1 / CostModel::kH100Bf16Flops + c1 + f2 / CostModel::kH100Bf16Flops)
      << "the caller picks the flop rate of the precision it models";
}

TEST(Timeline, SyncAllReduceAfterComputeIsAllExposed) {
  TraceBuilder r0, r1;
  r0.leaf("backward", "0", 2).collective("all_reduce", {0, 1}, 0, 8);
  r1.leaf("backward", "0", 3).collective("all_reduce", {0, 1}, 0, 8);
  const Timeline tl = simulate_timeline({r0.events(), r1.events()}, round_model());

  // Ring all-reduce over 2 ranks: 2(N-1) = 2 steps of alpha, plus 8 bytes sent at 4 B/s.
  const double duration = 2 * 0.25 + 8.0 / 4;
  const double start = 3;  // the later rank issues it at 3
  for (int r = 0; r < 2; ++r) {
    const RankTimeline& rank = tl.ranks[r];
    const std::vector<Interval> comm = of_category(rank, Category::Communication);
    ASSERT_EQ(comm.size(), 1u) << "rank " << r;
    EXPECT_EQ(comm[0].start, start) << "rank " << r << ": a collective starts when all issued it";
    EXPECT_EQ(comm[0].end, start + duration) << "rank " << r;
    EXPECT_EQ(rank.comm_busy, duration);
    EXPECT_EQ(rank.exposed_comm, duration) << "rank " << r << ": a sync all-reduce after the "
                                           << "compute hides nothing";
    EXPECT_EQ(rank.hidden_comm_fraction, 0) << "rank " << r;
  }
  const double step = start + duration;
  EXPECT_EQ(tl.step_time(), step);
  EXPECT_EQ(tl.ranks[0].idle, step - 2) << "rank 0 waits for rank 1, then for the all-reduce";
  EXPECT_EQ(tl.ranks[0].bubble_fraction, (step - 2) / step);
  EXPECT_EQ(tl.ranks[1].bubble_fraction, (step - 3) / step);
  const std::vector<Interval> waits = of_category(tl.ranks[0], Category::IdleWait);
  ASSERT_EQ(waits.size(), 1u);
  EXPECT_EQ(waits[0].name, "wait all_reduce");
  EXPECT_EQ(waits[0].start, 2);
  EXPECT_EQ(waits[0].end, step);

  const WorldSummary w = tl.world();
  EXPECT_EQ(w.bubble_fraction.min, (step - 3) / step);
  EXPECT_EQ(w.bubble_fraction.max, (step - 2) / step);
  EXPECT_EQ(w.compute_busy.mean, 2.5);
  EXPECT_EQ(w.exposed_comm.max, duration);
}

// DDP's overlap: the gradients of layer 3 are all-reduced while layers 2 and 1 run backward.
TEST(Timeline, AsyncAllReduceHidesBehindTheRemainingBackward) {
  auto trace = [](bool async) {
    TraceBuilder t;
    t.leaf("backward", "3", 1).collective("all_reduce", {0, 1}, 0, 16, async ? 0 : -1);
    t.leaf("backward", "2", 1).leaf("backward", "1", 2);
    if (async) t.wait(0);
    return t.events();
  };
  const Timeline tl = simulate_timeline({trace(true), trace(true)}, round_model());

  const double duration = 2 * 0.25 + 16.0 / 4;  // 4.5 s, issued at 1
  const double overlapped = 1 + 2;              // backward of layers 2 and 1, from 1 to 4
  for (int r = 0; r < 2; ++r) {
    const RankTimeline& rank = tl.ranks[r];
    EXPECT_EQ(rank.comm_busy, duration) << "rank " << r;
    EXPECT_EQ(rank.exposed_comm, duration - overlapped)
        << "rank " << r << ": only the part after the last backward is exposed";
    EXPECT_DOUBLE_EQ(rank.hidden_comm_fraction, overlapped / duration) << "rank " << r;
    EXPECT_EQ(rank.end_time, 1 + duration) << "rank " << r << ": the wait ends with the all-reduce";
    const std::vector<Interval> waits = of_category(rank, Category::IdleWait);
    ASSERT_EQ(waits.size(), 1u) << "rank " << r << ": the compute stream blocks only at the wait";
    EXPECT_EQ(waits[0].start, 4);
    EXPECT_EQ(waits[0].end, 1 + duration);
  }
  const Timeline sync = simulate_timeline({trace(false), trace(false)}, round_model());
  EXPECT_EQ(sync.step_time(), 1 + duration + 3) << "sync: the all-reduce blocks the backward";
  EXPECT_EQ(sync.step_time() - tl.step_time(), overlapped)
      << "async saves exactly the overlapped compute";
}

// DDP's buckets: two async all-reduces issued back to back run one after the other on the
// communication stream; the second waits for the first, not only for its own issue.
TEST(Timeline, AsyncCollectivesQueueOnTheCommunicationStream) {
  auto trace = [] {
    TraceBuilder t;
    t.leaf("backward", "2", 1).collective("all_reduce", {0, 1}, 0, 16, /*work_id=*/0);
    t.leaf("backward", "1", 1).collective("all_reduce", {0, 1}, 1, 8, /*work_id=*/1);
    t.leaf("backward", "0", 1).wait(0).wait(1);
    return t.events();
  };
  const Timeline tl = simulate_timeline({trace(), trace()}, round_model());

  const double first = 2 * 0.25 + 16.0 / 4;  // 4.5 s, issued at 1
  const double second = 2 * 0.25 + 8.0 / 4;  // 2.5 s, issued at 2 but queued behind the first
  const RankTimeline& r0 = tl.ranks[0];
  const std::vector<Interval> comm = of_category(r0, Category::Communication);
  ASSERT_EQ(comm.size(), 2u);
  EXPECT_EQ(comm[0].start, 1);
  EXPECT_EQ(comm[1].start, 1 + first) << "the second all-reduce starts when the first ends";
  EXPECT_EQ(comm[1].end, 1 + first + second);
  EXPECT_EQ(tl.step_time(), 1 + first + second);
  const double overlapped = 2;  // backward of layers 1 and 0, from 1 to 3
  EXPECT_EQ(r0.exposed_comm, first + second - overlapped);
  EXPECT_DOUBLE_EQ(r0.hidden_comm_fraction, overlapped / (first + second));
  EXPECT_EQ(r0.idle, tl.step_time() - 3) << "blocked in the two waits from 3 to the end";
}

// Each collective over N = 4 ranks costs its ring's steps of alpha plus the busiest member's
// bytes over the link (alpha 0.25 s, 4 B/s).
TEST(Timeline, EachCollectiveCostsItsRingSteps) {
  const int n = 4;
  const double alpha = 0.25, bw = 4;
  const double mib = 1 << 20, s = 2.5 * mib;  // broadcast: k = 3 pieces of at most 1 MiB
  struct Case {
    std::string op;
    double expected;
  };
  const std::vector<Case> cases = {
      {"all_reduce", 2 * (n - 1) * alpha + 12 / bw},  // 2(N-1) steps; rank 0 sends the most: 12
      {"reduce_scatter", (n - 1) * alpha + 12 / bw},  // N-1 steps
      {"all_gather", (n - 1) * alpha + 12 / bw},
      {"barrier", 2 * n * alpha},  // twice around the ring, no payload
      {"broadcast", (n + 3 - 2) * alpha + s * (n + 3 - 2) / 3 / bw},  // pipelined chain
  };
  for (const Case& c : cases) {
    std::vector<std::vector<TraceEvent>> traces;
    for (int r = 0; r < n; ++r) {
      const int64_t sent = c.op == "broadcast" ? (r < n - 1 ? int64_t(s) : 0) : (r == 0 ? 12 : 8);
      traces.push_back(TraceBuilder().collective(c.op, {0, 1, 2, 3}, 0, sent).events());
    }
    const Timeline tl = simulate_timeline(traces, round_model());
    for (int r = 0; r < n; ++r) {
      EXPECT_DOUBLE_EQ(tl.ranks[r].comm_busy, c.expected)
          << c.op << " over 4 ranks, rank " << r << ": steps * alpha + busiest bytes / bandwidth";
    }
  }
  std::vector<std::vector<TraceEvent>> alone = {
      TraceBuilder().collective("all_reduce", {0}, 0, 0).events()};
  EXPECT_EQ(simulate_timeline(alone, round_model()).step_time(), 0) << "a group of one is free";
  alone[0][0].op = "all_to_all";
  EXPECT_NE(error_of(alone).find("rank 0: unknown collective all_to_all (seq 0"), std::string::npos)
      << error_of(alone);
}

TEST(Timeline, CollectiveAcrossNodesUsesTheInterNodeLink) {
  const CostModel model;  // 8 ranks per node: ranks 0 and 8 are on different nodes
  const int64_t bytes = 64 << 20;
  std::vector<std::vector<TraceEvent>> traces(16);
  traces[0] = TraceBuilder().collective("all_reduce", {0, 8}, 0, bytes).events();
  traces[8] = TraceBuilder().collective("all_reduce", {0, 8}, 0, bytes).events();
  traces[1] = TraceBuilder().collective("all_reduce", {1, 2}, 0, bytes).events();
  traces[2] = TraceBuilder().collective("all_reduce", {1, 2}, 0, bytes).events();
  const Timeline tl = simulate_timeline(traces, model);

  const double ib = 2 * model.inter_node.alpha_s + bytes / model.inter_node.bandwidth;
  const double nvlink = 2 * model.intra_node.alpha_s + bytes / model.intra_node.bandwidth;
  EXPECT_EQ(tl.ranks[0].comm_busy, ib) << "group {0,8} spans two nodes: InfiniBand, "
                                       << "2 alpha + bytes / 50 GB/s";
  EXPECT_EQ(tl.ranks[8].comm_busy, ib);
  EXPECT_EQ(tl.ranks[1].comm_busy, nvlink) << "group {1,2} is in one node: NVLink";
  EXPECT_EQ(tl.ranks[5].end_time, 0) << "a rank with an empty trace does nothing";

  CostModel one_node = model;
  one_node.ranks_per_node = 16;
  EXPECT_EQ(simulate_timeline(traces, one_node).ranks[0].comm_busy, nvlink)
      << "with 16 ranks per node, {0,8} is one node";
}

TEST(Timeline, PipelineStageWaitsForTheActivation) {
  // Stage 0: forward (2 s), blocking send of 4 bytes to stage 1. Stage 1: recv, forward (3 s).
  TraceBuilder s0, s1;
  s0.leaf("forward", "0", 2).p2p("send", {1}, 4);
  s1.p2p("recv", {0}, 4).leaf("forward", "1", 3);
  const Timeline tl = simulate_timeline({s0.events(), s1.events()}, round_model());

  const double arrival = 2 + (0.25 + 4.0 / 4);  // posted by both at 2, alpha + bytes / bw
  const double step = arrival + 3;
  EXPECT_EQ(tl.step_time(), step);
  const RankTimeline& stage1 = tl.ranks[1];
  const std::vector<Interval> waits = of_category(stage1, Category::IdleWait);
  ASSERT_EQ(waits.size(), 1u);
  EXPECT_EQ(waits[0].name, "wait recv from 0");
  EXPECT_EQ(waits[0].start, 0);
  EXPECT_EQ(waits[0].end, arrival) << "stage 1 idles until the activation has arrived";
  EXPECT_EQ(stage1.idle, arrival);
  EXPECT_EQ(stage1.bubble_fraction, arrival / step);
  const RankTimeline& stage0 = tl.ranks[0];
  EXPECT_EQ(stage0.idle, step - 2) << "stage 0: blocked in its send, then idle to the step's end";
  EXPECT_EQ(stage0.bubble_fraction, (step - 2) / step);
  EXPECT_EQ(of_category(stage0, Category::IdleWait).back().name, "idle (end of step)");
  EXPECT_EQ(of_category(stage0, Category::Communication).at(0).name, "send to 1");
}

TEST(Timeline, IsendBlocksOnlyAtItsWait) {
  TraceBuilder s0, s1;
  s0.leaf("forward", "a", 2).p2p("isend", {1}, 4, /*work_id=*/7).leaf("forward", "b", 3).wait(7);
  s1.p2p("irecv", {0}, 4, /*work_id=*/0).leaf("forward", "c", 1).wait(0).leaf("forward", "d", 1);
  const Timeline tl = simulate_timeline({s0.events(), s1.events()}, round_model());

  const double arrival = 2 + (0.25 + 4.0 / 4);
  EXPECT_EQ(tl.ranks[0].end_time, 5) << "the isend (2 to 3.25) hides behind forward b (2 to 5)";
  EXPECT_EQ(tl.ranks[0].exposed_comm, 0);
  EXPECT_EQ(tl.ranks[1].end_time, arrival + 1) << "rank 1 computes c, then waits for the irecv";
  const std::vector<Interval> waits = of_category(tl.ranks[1], Category::IdleWait);
  ASSERT_GE(waits.size(), 1u);
  EXPECT_EQ(waits[0].start, 1);
  EXPECT_EQ(waits[0].end, arrival);
}

// GPipe: every stage runs the m forwards, then the m backwards; each forward and backward costs
// 1 s and links are free. The step takes 2(m+p-1) s, of which each stage computes 2m.
TEST(Timeline, GPipeBubbleIsPMinusOneOverMPlusPMinusOne) {
  const int p = 4, m = 4;
  CostModel free_links = round_model();
  free_links.intra_node = free_links.inter_node = Link{0, std::numeric_limits<double>::infinity()};
  std::vector<std::vector<TraceEvent>> traces;
  for (int s = 0; s < p; ++s) {
    TraceBuilder t;
    const std::string stage = std::to_string(s);
    for (int j = 0; j < m; ++j) {
      if (s > 0) t.p2p("recv", {s - 1}, 1024);
      t.leaf("forward", stage, 1);
      if (s < p - 1) t.p2p("send", {s + 1}, 1024);
    }
    for (int j = 0; j < m; ++j) {
      if (s < p - 1) t.p2p("recv", {s + 1}, 1024);
      t.leaf("backward", stage, 1);
      if (s > 0) t.p2p("send", {s - 1}, 1024);
    }
    traces.push_back(t.events());
  }
  const Timeline tl = simulate_timeline(traces, free_links);

  EXPECT_EQ(tl.step_time(), 2 * (m + p - 1));
  for (int s = 0; s < p; ++s) {
    EXPECT_EQ(tl.ranks[s].compute_busy, 2 * m) << "stage " << s;
    EXPECT_EQ(tl.ranks[s].bubble_fraction, double(p - 1) / (m + p - 1))
        << "stage " << s << ": GPipe's bubble (p-1)/(m+p-1) = 3/7";
  }
  EXPECT_EQ(tl.world().bubble_fraction.mean, double(p - 1) / (m + p - 1));
}

TEST(Timeline, UnmatchedCollectiveThrowsNamingRankOpAndSeq) {
  TraceBuilder r0, r1;
  r0.leaf("backward", "0", 1).collective("all_reduce", {0, 1}, 0, 8);
  r1.leaf("backward", "0", 1);
  const std::string msg = error_of({r0.events(), r1.events()});
  EXPECT_NE(msg.find("unmatched collective"), std::string::npos) << msg;
  EXPECT_NE(msg.find("rank 0 issued all_reduce (seq 2, group {0,1} #0)"), std::string::npos) << msg;
  EXPECT_NE(msg.find("rank 1 never issued it"), std::string::npos) << msg;

  TraceBuilder r1_other;
  r1_other.collective("all_gather", {0, 1}, 0, 8);
  const std::string other = error_of({r0.events(), r1_other.events()});
  EXPECT_NE(other.find("rank 1 issued all_gather (seq 0"), std::string::npos)
      << "the same (group, group_seq) as another op: " << other;
}

TEST(Timeline, UnmatchedOrDeadlockedPointToPointThrows) {
  TraceBuilder a0, a1;
  a0.p2p("send", {1}, 4).p2p("send", {1}, 4);
  a1.p2p("recv", {0}, 4);
  const std::string unmatched = error_of({a0.events(), a1.events()});
  EXPECT_NE(unmatched.find("rank 0 sends 2 message(s) to rank 1"), std::string::npos) << unmatched;
  EXPECT_NE(unmatched.find("rank 0's send (seq 1)"), std::string::npos) << unmatched;

  // Both ranks send first: each blocking send waits for a receive queued behind the other's send.
  TraceBuilder b0, b1;
  b0.p2p("send", {1}, 4).p2p("recv", {1}, 4);
  b1.p2p("send", {0}, 4).p2p("recv", {0}, 4);
  const std::string deadlock = error_of({b0.events(), b1.events()});
  EXPECT_NE(deadlock.find("deadlock"), std::string::npos) << deadlock;
  EXPECT_NE(deadlock.find("rank 0: compute stream blocked at send (seq 0)"), std::string::npos)
      << deadlock;
  EXPECT_NE(deadlock.find("waiting for rank 1 (has not issued recv (seq 1) yet; its compute "
                          "stream is blocked at send (seq 0))"),
            std::string::npos)
      << deadlock;

  // send_recv posts both halves at once: the same exchange completes.
  TraceBuilder c0, c1;
  c0.p2p("send_recv", {1, 1}, 4);
  c1.p2p("send_recv", {0, 0}, 4);
  const Timeline tl = simulate_timeline({c0.events(), c1.events()}, round_model());
  EXPECT_EQ(tl.step_time(), 0.25 + 4.0 / 4) << "both directions at once on a full-duplex link";
}

TEST(Timeline, MalformedTracesThrowNamingRankAndSeq) {
  TraceBuilder unknown_wait;
  unknown_wait.leaf("forward", "0", 1).wait(3);
  EXPECT_NE(error_of({unknown_wait.events()}).find("rank 0: wait (seq 2) of work 3"),
            std::string::npos)
      << error_of({unknown_wait.events()});

  TraceBuilder crossed;
  crossed.begin("forward", "0").begin("forward", "0.a").end("forward", "0");
  EXPECT_NE(error_of({crossed.events()})
                .find("ModuleEnd of forward '0' (seq 2) does not close the open ModuleBegin of "
                      "forward '0.a' (seq 1)"),
            std::string::npos)
      << error_of({crossed.events()});

  TraceBuilder unclosed;
  unclosed.begin("backward", "1");
  EXPECT_NE(error_of({unclosed.events()}).find("ModuleBegin of backward '1' (seq 0) never ends"),
            std::string::npos)
      << error_of({unclosed.events()});
}

TEST(Timeline, ChromeTraceHasOneProcessPerRankAndOneThreadPerStream) {
  TraceBuilder t0, t1;
  for (TraceBuilder* t : {&t0, &t1}) {
    t->begin("backward", "").leaf("backward", "1", 1).collective("all_reduce", {0, 1}, 0, 16, 0);
    t->leaf("backward", "0", 2).wait(0).end("backward", "");
  }
  const Timeline tl = simulate_timeline({t0.events(), t1.events()}, round_model());
  const nlohmann::json doc = nlohmann::json::parse(to_chrome_trace(tl));  // throws if invalid

  std::size_t intervals = 0;
  for (const RankTimeline& r : tl.ranks) intervals += r.intervals.size();
  ASSERT_EQ(intervals, 2u * 5) << "per rank: span, 2 compute, 1 wait, 1 all_reduce";
  int complete = 0, metadata = 0;
  for (const nlohmann::json& e : doc.at("traceEvents")) {
    const std::string ph = e.at("ph");
    const int pid = e.at("pid"), tid = e.at("tid");
    EXPECT_TRUE(pid == 0 || pid == 1) << "one process per rank, pid = rank: " << e.dump();
    if (ph == "M") {
      ++metadata;
      continue;
    }
    ASSERT_EQ(ph, "X") << e.dump();
    ++complete;
    const bool comm = e.at("cat") == "communication";
    EXPECT_EQ(tid, comm ? 1 : 0) << "tid 0 compute stream, 1 communication stream: " << e.dump();
    if (comm) {
      EXPECT_EQ(e.at("name"), "all_reduce");
      EXPECT_EQ(e.at("args").at("bytes"), 16);
      EXPECT_EQ(e.at("args").at("op"), "all_reduce");
      EXPECT_EQ(e.at("ts"), 1e6) << "microseconds: issued at 1 s";
      EXPECT_EQ(e.at("dur"), (2 * 0.25 + 16.0 / 4) * 1e6);
    }
  }
  EXPECT_EQ(complete, static_cast<int>(intervals)) << "one X event per interval";
  EXPECT_EQ(metadata, 2 * 3) << "per rank: process_name and two thread_names";
  EXPECT_EQ(doc.at("traceEvents").at(0).at("args").at("name"), "rank 0") << "the default name";

  Timeline named = tl;  // names given for some ranks: the others keep "rank r"
  named.names = {"stage 0 (world rank 0)"};
  const nlohmann::json named_doc = nlohmann::json::parse(to_chrome_trace(named));
  std::vector<std::string> processes;
  for (const nlohmann::json& e : named_doc.at("traceEvents")) {
    if (e.at("name") == "process_name") processes.push_back(e.at("args").at("name"));
  }
  EXPECT_EQ(processes, (std::vector<std::string>{"stage 0 (world rank 0)", "rank 1"}));

  const std::string path = ::testing::TempDir() + "timeline_test_trace.json";
  write_chrome_trace(tl, path);
  std::ifstream in(path);
  EXPECT_EQ(nlohmann::json::parse(in), doc) << "the file holds the same trace";
  std::remove(path.c_str());
}

}  // namespace
}  // namespace gtl::dist
