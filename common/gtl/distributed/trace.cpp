// Trace: the per-rank record of communication and module events (see trace.h).
#include "gtl/distributed/trace.h"

#include <algorithm>

namespace gtl::dist {

const char* trace_kind_name(TraceKind kind) {
  switch (kind) {
    case TraceKind::Collective:
      return "collective";
    case TraceKind::PointToPoint:
      return "point_to_point";
    case TraceKind::Wait:
      return "wait";
    case TraceKind::ModuleBegin:
      return "module_begin";
    case TraceKind::ModuleEnd:
      return "module_end";
  }
  return "?";
}

bool Trace::enabled() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return enabled_;
}

void Trace::set_enabled(bool enabled) {
  std::lock_guard<std::mutex> lock(mutex_);
  enabled_ = enabled;
}

int64_t Trace::record(TraceEvent event) {
  std::lock_guard<std::mutex> lock(mutex_);
  if (!enabled_) return -1;
  event.seq = static_cast<int64_t>(events_.size());
  events_.push_back(std::move(event));
  return events_.back().seq;
}

void Trace::add_bytes(int64_t seq, int64_t sent, int64_t received) {
  std::lock_guard<std::mutex> lock(mutex_);
  if (seq < 0 || seq >= static_cast<int64_t>(events_.size())) return;
  events_[static_cast<std::size_t>(seq)].bytes_sent += sent;
  events_[static_cast<std::size_t>(seq)].bytes_received += received;
}

void Trace::add_peer(int64_t seq, int peer) {
  std::lock_guard<std::mutex> lock(mutex_);
  if (seq < 0 || seq >= static_cast<int64_t>(events_.size())) return;
  std::vector<int>& peers = events_[static_cast<std::size_t>(seq)].peers;
  if (std::find(peers.begin(), peers.end(), peer) == peers.end()) peers.push_back(peer);
}

int64_t Trace::next_work_id() {
  std::lock_guard<std::mutex> lock(mutex_);
  return next_work_id_++;
}

std::vector<TraceEvent> Trace::events() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return events_;
}

std::vector<TraceEvent> Trace::events(TraceKind kind) const {
  std::lock_guard<std::mutex> lock(mutex_);
  std::vector<TraceEvent> out;
  for (const TraceEvent& e : events_) {
    if (e.kind == kind) out.push_back(e);
  }
  return out;
}

std::vector<TraceEvent> Trace::events(const std::string& op) const {
  std::lock_guard<std::mutex> lock(mutex_);
  std::vector<TraceEvent> out;
  for (const TraceEvent& e : events_) {
    if (e.op == op) out.push_back(e);
  }
  return out;
}

void Trace::clear() {
  std::lock_guard<std::mutex> lock(mutex_);
  events_.clear();
  next_work_id_ = 0;
}

}  // namespace gtl::dist
