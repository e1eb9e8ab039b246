// A trace event's line (trace_text.h): the documented layout field by field, a round trip that
// gives back every field the cost model reads (doubles to the bit, empty texts and lists
// included), and refusals of lines that are not an event.
#include "gtl/distributed/trace_text.h"

#include <gtest/gtest.h>

#include <cstring>

namespace gtl::dist {
namespace {

TraceEvent async_all_reduce() {
  TraceEvent e;
  e.seq = 8;
  e.kind = TraceKind::Collective;
  e.op = "all_reduce";
  e.bytes = 4096;
  e.bytes_sent = 6144;
  e.bytes_received = 6144;
  e.peers = {1, 2};
  e.group = {0, 1, 2};
  e.group_seq = 0;
  e.async = true;
  e.work_id = 0;
  return e;
}

TraceEvent leaf_backward_end() {
  TraceEvent e;
  e.seq = 123456789012;
  e.kind = TraceKind::ModuleEnd;
  e.op = "backward";
  e.module = "2.fc1";
  e.module_kind = "linear";
  e.leaf = true;
  e.flops = 0.1 * 3;  // 0.30000000000000004: 17 digits are needed to read back its bits
  e.mem_bytes = 1e20 / 3;
  return e;
}

bool same_bits(double a, double b) {
  return std::memcmp(&a, &b, sizeof a) == 0;
}

void expect_same_event(const TraceEvent& got, const TraceEvent& want, const std::string& what) {
  EXPECT_EQ(got.seq, want.seq) << what << ": seq";
  EXPECT_EQ(got.kind, want.kind) << what << ": kind";
  EXPECT_EQ(got.op, want.op) << what << ": op";
  EXPECT_EQ(got.bytes, want.bytes) << what << ": bytes";
  EXPECT_EQ(got.bytes_sent, want.bytes_sent) << what << ": bytes_sent";
  EXPECT_EQ(got.bytes_received, want.bytes_received) << what << ": bytes_received";
  EXPECT_EQ(got.peers, want.peers) << what << ": peers";
  EXPECT_EQ(got.group, want.group) << what << ": group";
  EXPECT_EQ(got.group_seq, want.group_seq) << what << ": group_seq";
  EXPECT_EQ(got.async, want.async) << what << ": async";
  EXPECT_EQ(got.work_id, want.work_id) << what << ": work_id";
  EXPECT_EQ(got.module, want.module) << what << ": module";
  EXPECT_EQ(got.module_kind, want.module_kind) << what << ": module_kind";
  EXPECT_EQ(got.leaf, want.leaf) << what << ": leaf";
  EXPECT_TRUE(same_bits(got.flops, want.flops))
      << what << ": flops " << got.flops << " must read back as the same bits as " << want.flops;
  EXPECT_TRUE(same_bits(got.mem_bytes, want.mem_bytes))
      << what << ": mem_bytes " << got.mem_bytes << " must read back as the same bits as "
      << want.mem_bytes;
}

TEST(TraceText, TheLineHoldsEveryFieldInTheDocumentedOrder) {
  EXPECT_EQ(trace_event_line(async_all_reduce()),
            "event 8 0 all_reduce 4096 6144 6144 2 1 2 3 0 1 2 0 1 0 - - 0 0 0")
      << "the layout of trace_text.h, with '-' for the empty module and module kind";
  EXPECT_EQ(trace_event_line(leaf_backward_end()),
            "event 123456789012 4 backward 0 0 0 0 0 -1 0 -1 2.fc1 linear 1 "
            "0.30000000000000004 3.3333333333333332e+19")
      << "empty lists are a count of 0; doubles have 17 significant digits";
}

TEST(TraceText, EveryFieldRoundTrips) {
  TraceEvent empty_texts;  // no op, module or module kind: each must come back empty, not "-"
  empty_texts.kind = TraceKind::Wait;
  empty_texts.work_id = 7;
  for (const TraceEvent& e : {async_all_reduce(), leaf_backward_end(), empty_texts}) {
    const std::string line = trace_event_line(e);
    const std::optional<TraceEvent> back = parse_trace_event_line(line);
    ASSERT_TRUE(back.has_value()) << "a line trace_event_line wrote must parse: " << line;
    expect_same_event(*back, e, line);
  }
}

TEST(TraceText, LinesThatAreNotAnEventAreRefused) {
  const std::string good = trace_event_line(async_all_reduce());
  const std::string bad[] = {
      "",
      "evnt" + good.substr(5),          // another first word
      good.substr(0, good.rfind(' ')),  // the last field missing
      "event 8 5 all_reduce 4096 6144 6144 2 1 2 3 0 1 2 0 1 0 - - 0 0 0",   // kind past ModuleEnd
      "event 8 -1 all_reduce 4096 6144 6144 2 1 2 3 0 1 2 0 1 0 - - 0 0 0",  // negative kind
      "event 8 0 all_reduce many 6144 6144 2 1 2 3 0 1 2 0 1 0 - - 0 0 0",   // bytes not a number
      "event 8 0 all_reduce 4096 6144 6144 5 1 2 3 0 1 2 0 1 0 - - 0 0 0",   // 5 peers: too few
  };
  for (const std::string& line : bad)
    EXPECT_FALSE(parse_trace_event_line(line).has_value())
        << "'" << line << "' is not a trace event line and must be refused";
}

}  // namespace
}  // namespace gtl::dist
