#include "gtl/distributed/trace_text.h"

#include <sstream>

namespace gtl::dist {

namespace {

std::string text_or_dash(const std::string& s) {
  return s.empty() ? std::string("-") : s;
}

void read_text(std::istream& in, std::string& out) {
  in >> out;
  if (out == "-") out.clear();
}

template <typename T>
void write_list(std::ostream& out, const std::vector<T>& v) {
  out << ' ' << v.size();
  for (const T& x : v) out << ' ' << x;
}

template <typename T>
void read_list(std::istream& in, std::vector<T>& v) {
  std::size_t n = 0;
  in >> n;
  if (!in) return;
  v.resize(n);
  for (T& x : v) in >> x;
}

}  // namespace

std::string trace_event_line(const TraceEvent& e) {
  std::ostringstream line;
  line.precision(17);
  line << "event " << e.seq << ' ' << static_cast<int>(e.kind) << ' ' << text_or_dash(e.op) << ' '
       << e.bytes << ' ' << e.bytes_sent << ' ' << e.bytes_received;
  write_list(line, e.peers);
  write_list(line, e.group);
  line << ' ' << e.group_seq << ' ' << e.async << ' ' << e.work_id << ' ' << text_or_dash(e.module)
       << ' ' << text_or_dash(e.module_kind) << ' ' << e.leaf << ' ' << e.flops << ' '
       << e.mem_bytes;
  return line.str();
}

std::optional<TraceEvent> parse_trace_event_line(const std::string& line) {
  std::istringstream in(line);
  std::string word;
  TraceEvent e;
  int kind = 0;
  in >> word >> e.seq >> kind;
  read_text(in, e.op);
  in >> e.bytes >> e.bytes_sent >> e.bytes_received;
  read_list(in, e.peers);
  read_list(in, e.group);
  in >> e.group_seq >> e.async >> e.work_id;
  read_text(in, e.module);
  read_text(in, e.module_kind);
  in >> e.leaf >> e.flops >> e.mem_bytes;
  if (!in || word != "event" || kind < 0 || kind > static_cast<int>(TraceKind::ModuleEnd))
    return std::nullopt;
  e.kind = static_cast<TraceKind>(kind);
  return e;
}

}  // namespace gtl::dist
