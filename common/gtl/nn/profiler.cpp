#include "gtl/nn/profiler.h"

#include <algorithm>
#include <cstdio>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <sstream>

#include "gtl/memory/allocator.h"
#include "gtl/nn/activation_checkpoint.h"
#include "gtl/runtime/error.h"
#include "gtl/runtime/nvtx.h"
#include "gtl/runtime/stream.h"

#ifdef GTL_HAVE_NVTX
#include <nvtx3/nvToolsExt.h>
#endif

namespace gtl::nn {

namespace {
constexpr size_t kNone = static_cast<size_t>(-1);  // no record, no timing pair
}  // namespace

// What begin() saw, for end() to take differences against, and what the call's direct children
// took (a container's own figures are its bracket's less its children's).
struct Profiler::Open {
  Module* module = nullptr;
  const char* pass = "";
  size_t call = kNone;  // a leaf's record in calls_ (made at begin)
  size_t pair = kNone;  // its timing events (GPU)
  double host_start_us = 0;
  std::chrono::steady_clock::time_point host_start;
  int64_t allocated = 0;
  LaunchCounts launches;
  HostSyncCounts syncs;
  double children_host_us = 0;
  int64_t children_allocated = 0;
  LaunchCounts children_launches;
  HostSyncCounts children_syncs;
  std::vector<size_t> children_pairs;
};

// Timing events (GPU only): an origin recorded when the profiler was made, then a (start, end)
// pair per call of any module, in the order the calls began. A recorded call's device time is its
// pair's span less its children's spans (leaves have none).
struct Profiler::DeviceTiming {
  Event origin{true};
  std::vector<Event> starts, ends;
  size_t last_end = 0;  // the end event recorded last: once it completes, every event has
};

namespace {
double micros(std::chrono::steady_clock::duration d) {
  return std::chrono::duration<double, std::micro>(d).count();
}

bool does_work(const ComputeCost& cost, const LaunchCounts& launches) {
  return cost.flops > 0 || cost.bytes > 0 || launches.kernels > 0 || launches.library > 0 ||
         launches.graphs > 0;
}
}  // namespace

Profiler::Profiler(Module& model, Device device)
    : device_(device), origin_(std::chrono::steady_clock::now()) {
  if (device.is_cuda() && cuda_available()) {
    timing_ = std::make_unique<DeviceTiming>();
    timing_->origin.record(current_stream());
  }
  Hooks h;
  h.before_forward = [this](Module& m) { begin(m, in_recomputation() ? "recompute" : "forward"); };
  h.after_forward = [this](Module&) { end(); };
  h.before_backward = [this](Module& m) { begin(m, "backward"); };
  h.after_backward = [this](Module&) { end(); };
  hooks_ = model.add_hooks(std::move(h));
}

Profiler::~Profiler() = default;

ProfiledCall Profiler::record_of(Module& m, const char* pass, double host_start_us) const {
  ProfiledCall c;
  c.path = m.path().empty() ? "model" : m.path();
  c.kind = m.kind();
  c.pass = pass;
  c.input_shape = m.last_input_shape();
  c.cost = std::string(pass) == "backward" ? m.backward_cost(c.input_shape)
                                           : m.forward_cost(c.input_shape);
  c.host_start_us = host_start_us;
  c.host_us = 0;
  return c;
}

void Profiler::begin(Module& m, const char* pass) {
  if (finished_) return;
#ifdef GTL_HAVE_NVTX
  nvtxRangePushA(((m.path().empty() ? std::string("model") : m.path()) + " " + pass).c_str());
#endif
  Open o;
  o.module = &m;
  o.pass = pass;
  o.host_start_us = micros(std::chrono::steady_clock::now() - origin_);
  if (m.is_leaf()) {
    o.call = calls_.size();
    calls_.push_back(record_of(m, pass, o.host_start_us));
    call_pairs_.push_back({});
  }
  if (timing_) {
    o.pair = timing_->starts.size();
    timing_->starts.emplace_back(true);
    timing_->ends.emplace_back(true);
    timing_->starts.back().record(current_stream());
    if (o.call != kNone) call_pairs_.back() = {o.pair};
  }
  o.host_start = std::chrono::steady_clock::now();
  o.allocated = current_allocator(device_)->stats().allocated_bytes;
  o.launches = launch_counts();
  o.syncs = host_sync_counts();
  open_.push_back(std::move(o));
}

void Profiler::end() {
  if (finished_ || open_.empty()) return;
  Open o = std::move(open_.back());
  open_.pop_back();
  const double host_us = micros(std::chrono::steady_clock::now() - o.host_start);
  const int64_t allocated = current_allocator(device_)->stats().allocated_bytes - o.allocated;
  const LaunchCounts launches = launch_counts() - o.launches;
  const HostSyncCounts syncs = host_sync_counts() - o.syncs;
  if (timing_) {
    timing_->ends[o.pair].record(current_stream());
    timing_->last_end = o.pair;
  }
#ifdef GTL_HAVE_NVTX
  nvtxRangePop();
#endif
  if (o.call != kNone) {
    ProfiledCall& c = calls_[o.call];
    c.host_us = host_us;
    c.allocated_bytes = allocated;
    c.launches = launches;
    c.syncs = syncs;
  } else {
    // A container: recorded only when it does work of its own (ResidualMLP's residual add, say),
    // with its bracket's figures less its children's.
    ProfiledCall c = record_of(*o.module, o.pass, o.host_start_us);
    c.host_us = host_us - o.children_host_us;
    c.allocated_bytes = allocated - o.children_allocated;
    c.launches = launches - o.children_launches;
    c.syncs = syncs - o.children_syncs;
    if (does_work(c.cost, c.launches)) {
      calls_.push_back(std::move(c));
      std::vector<size_t> pairs;
      if (timing_) {
        pairs.push_back(o.pair);
        pairs.insert(pairs.end(), o.children_pairs.begin(), o.children_pairs.end());
      }
      call_pairs_.push_back(std::move(pairs));
    }
  }
  if (!open_.empty()) {
    Open& parent = open_.back();
    parent.children_host_us += host_us;
    parent.children_allocated += allocated;
    parent.children_launches += launches;
    parent.children_syncs += syncs;
    if (timing_) parent.children_pairs.push_back(o.pair);
  }
}

void Profiler::finish() {
  if (finished_) return;
  finished_ = true;
  hooks_.remove();
  GTL_CHECK(open_.empty(), "Profiler::finish: " << open_.size()
                                                << " layer call(s) still running (finish after "
                                                   "the step, not inside it)");
  if (!timing_ || timing_->ends.empty()) return;
  timing_->ends[timing_->last_end].synchronize();  // the one wait: every event is then complete
  const auto span_us = [&](size_t pair) {
    return 1e3 * Event::elapsed_ms(timing_->starts[pair], timing_->ends[pair]);
  };
  for (size_t i = 0; i < calls_.size(); ++i) {
    const std::vector<size_t>& pairs = call_pairs_[i];  // its own, then its children's
    if (pairs.empty()) continue;
    calls_[i].device_start_us = 1e3 * Event::elapsed_ms(timing_->origin, timing_->starts[pairs[0]]);
    double us = span_us(pairs[0]);
    for (size_t k = 1; k < pairs.size(); ++k) us -= span_us(pairs[k]);
    calls_[i].device_us = us;
  }
}

void Profiler::clear() {
  GTL_CHECK(open_.empty(), "Profiler::clear: a layer call is still running");
  calls_.clear();
  call_pairs_.clear();
  if (timing_) {
    timing_->starts.clear();
    timing_->ends.clear();
    timing_->last_end = 0;
  }
}

ProfileRow& ProfileRow::operator+=(const ProfileRow& other) {
  calls += other.calls;
  host_us += other.host_us;
  if (other.device_us >= 0) device_us = (device_us < 0 ? 0 : device_us) + other.device_us;
  flops += other.flops;
  bytes += other.bytes;
  allocated_bytes += other.allocated_bytes;
  launches += other.launches;
  syncs += other.syncs;
  return *this;
}

std::vector<ProfileRow> Profiler::summary() const {
  std::map<std::string, ProfileRow> rows;
  for (const ProfiledCall& c : calls_) {
    const std::string name = c.kind + " " + c.pass;
    ProfileRow& r = rows[name];
    r.name = name;
    r += ProfileRow{
        name,       1,      c.host_us, c.device_us, c.cost.flops, c.cost.bytes, c.allocated_bytes,
        c.launches, c.syncs};
  }
  std::vector<ProfileRow> out;
  for (auto& [name, row] : rows) out.push_back(row);
  auto time = [](const ProfileRow& r) { return r.device_us >= 0 ? r.device_us : r.host_us; };
  std::stable_sort(out.begin(), out.end(),
                   [&](const ProfileRow& a, const ProfileRow& b) { return time(a) > time(b); });
  return out;
}

std::string Profiler::table() const {
  const std::vector<ProfileRow> rows = summary();
  ProfileRow total;
  total.name = "total";
  for (const ProfileRow& r : rows) total += r;
  std::ostringstream os;
  char line[256];
  std::snprintf(line, sizeof line, "%-28s %6s %12s %12s %10s %10s %12s %8s %6s\n", "layer pass",
                "calls", "host us", "device us", "MFLOP", "MB", "allocated", "launches", "syncs");
  os << line;
  auto print = [&](const ProfileRow& r) {
    char device[32] = "-";
    if (r.device_us >= 0) std::snprintf(device, sizeof device, "%.1f", r.device_us);
    std::snprintf(line, sizeof line, "%-28s %6lld %12.1f %12s %10.3f %10.3f %12lld %8lld %6lld\n",
                  r.name.c_str(), static_cast<long long>(r.calls), r.host_us, device, r.flops / 1e6,
                  r.bytes / 1e6, static_cast<long long>(r.allocated_bytes),
                  static_cast<long long>(r.launches.total()),
                  static_cast<long long>(r.syncs.total()));
    os << line;
  };
  for (const ProfileRow& r : rows) print(r);
  print(total);
  return os.str();
}

std::string Profiler::chrome_trace() const {
  // Two tracks of process 0: the host's view (launch time) and the device's (run time).
  nlohmann::json events = nlohmann::json::array();
  for (const auto& [tid, track] : {std::pair{1, "host"}, std::pair{2, "device"}})
    events.push_back({{"name", "thread_name"},
                      {"ph", "M"},
                      {"pid", 0},
                      {"tid", tid},
                      {"args", {{"name", track}}}});
  for (const ProfiledCall& c : calls_) {
    const nlohmann::json args = {{"kind", c.kind},
                                 {"shape", shape_str(c.input_shape)},
                                 {"flops", c.cost.flops},
                                 {"bytes", c.cost.bytes},
                                 {"allocated_bytes", c.allocated_bytes},
                                 {"kernels", c.launches.kernels},
                                 {"library_calls", c.launches.library},
                                 {"host_syncs", c.syncs.total()}};
    const std::string name = c.path + " " + c.pass;
    events.push_back({{"name", name},
                      {"cat", c.pass},
                      {"ph", "X"},
                      {"pid", 0},
                      {"tid", 1},
                      {"ts", c.host_start_us},
                      {"dur", c.host_us},
                      {"args", args}});
    if (c.device_us >= 0)
      events.push_back({{"name", name},
                        {"cat", c.pass},
                        {"ph", "X"},
                        {"pid", 0},
                        {"tid", 2},
                        {"ts", c.device_start_us},
                        {"dur", c.device_us},
                        {"args", args}});
  }
  return nlohmann::json{{"traceEvents", events}, {"displayTimeUnit", "ms"}}.dump(1);
}

void Profiler::write_chrome_trace(const std::string& path) const {
  std::ofstream out(path);
  GTL_CHECK(out, "Profiler::write_chrome_trace: cannot write " << path);
  out << chrome_trace() << '\n';
  GTL_CHECK(out.good(), "Profiler::write_chrome_trace: writing " << path << " failed");
}

}  // namespace gtl::nn
