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

// What begin() saw, for end() to take differences against.
struct Profiler::Open {
  size_t call;  // index into calls_
  std::chrono::steady_clock::time_point host_start;
  int64_t allocated;
  LaunchCounts launches;
  HostSyncCounts syncs;
};

// Timing events of every call (GPU only): an origin recorded when the profiler was made, then a
// (start, end) pair per call, in calls_' order.
struct Profiler::DeviceTiming {
  Event origin{true};
  std::vector<Event> starts, ends;
};

namespace {
double micros(std::chrono::steady_clock::duration d) {
  return std::chrono::duration<double, std::micro>(d).count();
}
}  // namespace

Profiler::Profiler(Module& model, Device device)
    : device_(device), origin_(std::chrono::steady_clock::now()) {
  if (device.is_cuda() && cuda_available()) {
    timing_ = std::make_unique<DeviceTiming>();
    timing_->origin.record(current_stream());
  }
  Hooks h;
  h.before_forward = [this](Module& m) {
    if (m.is_leaf()) begin(m, in_recomputation() ? "recompute" : "forward");
  };
  h.after_forward = [this](Module& m) {
    if (m.is_leaf()) end();
  };
  h.before_backward = [this](Module& m) {
    if (m.is_leaf()) begin(m, "backward");
  };
  h.after_backward = [this](Module& m) {
    if (m.is_leaf()) end();
  };
  hooks_ = model.add_hooks(std::move(h));
}

Profiler::~Profiler() = default;

void Profiler::begin(Module& m, const char* pass) {
  if (finished_) return;
  ProfiledCall c;
  c.path = m.path().empty() ? "model" : m.path();
  c.kind = m.kind();
  c.pass = pass;
  c.input_shape = m.last_input_shape();
  const std::string pass_name = pass;
  c.cost = pass_name == "backward" ? m.backward_cost(c.input_shape) : m.forward_cost(c.input_shape);
  c.host_start_us = micros(std::chrono::steady_clock::now() - origin_);
  c.host_us = 0;
#ifdef GTL_HAVE_NVTX
  nvtxRangePushA((c.path + " " + pass_name).c_str());
#endif
  calls_.push_back(std::move(c));
  if (timing_) {
    timing_->starts.emplace_back(true);
    timing_->starts.back().record(current_stream());
  }
  open_.push_back({calls_.size() - 1, std::chrono::steady_clock::now(),
                   current_allocator(device_)->stats().allocated_bytes, launch_counts(),
                   host_sync_counts()});
}

void Profiler::end() {
  if (finished_ || open_.empty()) return;
  const Open o = open_.back();
  open_.pop_back();
  ProfiledCall& c = calls_[o.call];
  c.host_us = micros(std::chrono::steady_clock::now() - o.host_start);
  c.allocated_bytes = current_allocator(device_)->stats().allocated_bytes - o.allocated;
  c.launches = launch_counts() - o.launches;
  c.syncs = host_sync_counts() - o.syncs;
  if (timing_) {
    timing_->ends.emplace_back(true);
    timing_->ends.back().record(current_stream());
  }
#ifdef GTL_HAVE_NVTX
  nvtxRangePop();
#endif
}

void Profiler::finish() {
  if (finished_) return;
  finished_ = true;
  hooks_.remove();
  GTL_CHECK(open_.empty(), "Profiler::finish: " << open_.size()
                                                << " layer call(s) still running (finish after "
                                                   "the step, not inside it)");
  if (!timing_ || timing_->ends.empty()) return;
  timing_->ends.back().synchronize();  // the one wait: every earlier event is then complete
  for (size_t i = 0; i < calls_.size(); ++i) {
    calls_[i].device_start_us = 1e3 * Event::elapsed_ms(timing_->origin, timing_->starts[i]);
    calls_[i].device_us = 1e3 * Event::elapsed_ms(timing_->starts[i], timing_->ends[i]);
  }
}

void Profiler::clear() {
  GTL_CHECK(open_.empty(), "Profiler::clear: a layer call is still running");
  calls_.clear();
  if (timing_) {
    timing_->starts.clear();
    timing_->ends.clear();
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
