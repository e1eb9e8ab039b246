// Helpers of lab 05's tests: per-rank inputs made of small integers (their sums are exact in
// float32 in any order, so results compare bit for bit), bitwise comparison of float vectors, and
// collecting every rank's trace after a run; the traffic a communication TODO must produce.
#pragma once

#include <cstdint>
#include <mutex>
#include <sstream>
#include <string>
#include <vector>

#include "bitwise_diff.h"
#include "gtl/distributed/in_process.h"
#include "gtl/distributed/trace.h"

namespace lab05::testing {

// Element i of rank r: an integer in [-5, 5].
inline float value(int rank, int64_t i) {
  return static_cast<float>((i * 7 + rank * 13) % 11 - 5);
}

inline std::vector<float> values(int rank, int64_t n) {
  std::vector<float> v(static_cast<std::size_t>(n));
  for (int64_t i = 0; i < n; ++i) v[static_cast<std::size_t>(i)] = value(rank, i);
  return v;
}

inline std::vector<float> summed(int world, int64_t n) {
  std::vector<float> out = values(0, n);
  for (int r = 1; r < world; ++r) {
    for (int64_t i = 0; i < n; ++i) out[static_cast<std::size_t>(i)] += value(r, i);
  }
  return out;
}

using gtl::testing::bitwise_diff;  // bitwise_diff.h

inline gtl::dist::RunOptions fast(bool deterministic = false) {
  gtl::dist::RunOptions o;
  o.timeout = std::chrono::seconds(10);
  o.deterministic = deterministic;
  return o;
}

// ---- the communication itself
// ------------------------------------------------- In-process ranks are threads of one address
// space: a TODO could produce the right numbers by reading another rank's tensor through a global,
// with no communication at all. The checks of a communication TODO therefore also read the
// communicator's counters (docs/distributed.md, "Counters"): these helpers return "" or what is
// wrong, and the attack tests (communication_attack_test.cpp) prove that a global-sharing
// implementation fails them.

// TODO 1, the ring on this rank after ring_all_reduce of n float32 elements: 2(N-1) send_recv
// steps (N-1 per phase), each moving one chunk of ceil(n/N) floats each way, so
// 2(N-1) * ceil(n/N) * 4 bytes sent and as many received, and no other call.
inline std::string ring_traffic_problem(const gtl::dist::Communicator& comm, int64_t n) {
  const int world = comm.world_size();
  if (world == 1) return "";
  const int64_t chunk = (n + world - 1) / world;
  const int64_t expected_bytes = 2 * (world - 1) * chunk * 4;
  const gtl::dist::OpCounters sr = comm.counters("send_recv");
  const gtl::dist::OpCounters all = comm.total_counters();
  std::ostringstream s;
  const std::string at = "N = " + std::to_string(world) + ", n = " + std::to_string(n) + ", rank " +
                         std::to_string(comm.rank()) + ": ";
  if (sr.calls != 2 * (world - 1) || all.calls != sr.calls) {
    s << at << "expected " << 2 * (world - 1) << " send_recv calls (one per ring step, N-1 per "
      << "phase) and no other call, got " << sr.calls << " send_recv of " << all.calls
      << " calls. Revisit the ring's steps: every chunk must travel through send_recv (no "
      << "collective of the core, no separate send and recv, no shared memory between ranks)";
  } else if (sr.bytes_sent != expected_bytes || sr.bytes_received != expected_bytes) {
    s << at << "expected " << expected_bytes << " bytes sent and received (2(N-1) chunks of "
      << "ceil(n/N) = " << chunk << " floats: the padded buffer's 2(N-1)/N), got " << sr.bytes_sent
      << " sent and " << sr.bytes_received << " received. Revisit the chunk "
      << "size and which chunk each step sends";
  }
  return s.str();
}

// TODO 2 on this rank after broadcast_parameters of `param_bytes` bytes of parameters from
// `root`: a broadcast of S bytes delivers S bytes to every rank but the root and none to the root
// (docs/distributed.md, "broadcast"), however the parameters are grouped (one broadcast each, or
// one of a flat copy); every collective runs over the whole world.
inline std::string broadcast_traffic_problem(const gtl::dist::Communicator& comm, int root,
                                             int64_t param_bytes) {
  const int64_t expected = comm.rank() == root ? 0 : param_bytes;
  const gtl::dist::OpCounters all = comm.total_counters();
  std::ostringstream s;
  const std::string at = "rank " + std::to_string(comm.rank()) + " of " +
                         std::to_string(comm.world_size()) + ", root " + std::to_string(root) +
                         ": ";
  if (all.bytes_received != expected) {
    s << at << "expected to receive " << expected << " bytes in all ("
      << (comm.rank() == root ? "the root receives nothing"
                              : "every parameter's bytes, once, from the root")
      << "), got " << all.bytes_received << " bytes in " << all.calls << " calls. Revisit what "
      << "must travel, and that it travels through the communicator, not through memory another "
      << "rank can read";
    return s.str();
  }
  if (comm.world_size() > 1 && comm.counters("broadcast").bytes_received != expected) {
    s << at << "expected all " << expected << " received bytes under broadcast, got "
      << comm.counters("broadcast").bytes_received << ": the spec's collective is the "
      << "communicator's broadcast";
    return s.str();
  }
  if (comm.trace()) {
    std::vector<int> world(static_cast<std::size_t>(comm.world_size()));
    for (int r = 0; r < comm.world_size(); ++r) world[static_cast<std::size_t>(r)] = r;
    for (const gtl::dist::TraceEvent& e : comm.trace()->events(gtl::dist::TraceKind::Collective)) {
      if (e.group != world) {
        s << at << "the " << e.op << " (event " << e.seq << ") ran over a group of "
          << e.group.size() << " ranks, expected the whole world of " << comm.world_size();
        return s.str();
      }
    }
  }
  return "";
}

}  // namespace lab05::testing
