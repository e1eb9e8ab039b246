// A trace event as one line of text, and back: every field the cost model (timeline.h) reads, so
// a trace written by one program is simulated by another exactly as the first would.
//
//   event <seq> <kind> <op> <bytes> <bytes_sent> <bytes_received> <#peers> <peers...>
//         <#group> <group...> <group_seq> <async> <work_id> <module> <module_kind> <leaf>
//         <flops> <mem_bytes>
//   event 8 0 all_reduce 4096 6144 6144 2 1 2 3 0 1 2 0 1 0 - - 0 0 0
//
// The kind is TraceKind's number, the flags are 0 or 1, "-" stands for an empty text (module ""
// is the model itself; no op, module or module kind holds a space), and doubles have 17
// significant digits, which read back as the same bits.
//
// Who uses it: the labs' tests record their traces for the judge in this form (lab06_cases.h,
// lab07_cases.h: record_traces) and the judges read them back (lab06_judge.cpp,
// lab07_judge.cpp: parse_event). Why in the core and not in the grader's channel
// (grader/channel): the line is the trace event's own text form, which belongs beside the event,
// while the channel is the plain-text protocol every lab shares and knows nothing of the core.
// The judges link the core already (they simulate the recorded traces with it) and never a
// student's file, so reading the events here keeps them independent of student code.
#pragma once

#include <optional>
#include <string>

#include "gtl/distributed/trace.h"

namespace gtl::dist {

std::string trace_event_line(const TraceEvent& event);

// The event `line` holds, or nullopt if it is not one: a word missing or not a number, a first
// word other than "event", a kind out of TraceKind's range.
std::optional<TraceEvent> parse_trace_event_line(const std::string& line);

}  // namespace gtl::dist
