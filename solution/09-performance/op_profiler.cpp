// Lab 09, TODO 1: a profiler for the core (op_profiler.h). Steps 1a (recording the ops of a step
// through the module hooks), 1b (the key_averages table) and 1c (the Chrome trace).
#include <algorithm>
#include <chrono>
#include <map>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "gtl/memory/allocator.h"
#include "gtl/runtime/error.h"
#include "gtl/runtime/stream.h"
#include "op_profiler.h"

#ifdef GTL_HAVE_NVTX
#include <nvtx3/nvToolsExt.h>
#endif

namespace lab09 {

struct OpProfiler::State {
  std::vector<OpRecord> ops;
  std::vector<StepSpan> steps;
  // SOLUTION(lab09) step 1a
  gtl::Device device = gtl::Device::cpu();
  std::chrono::steady_clock::time_point origin = std::chrono::steady_clock::now();
  gtl::nn::HookHandle hooks;
  bool in_step = false, warm = false, finished = false;
  bool timed = false;  // events on a GPU
  // One module call between its two hooks, and what its direct children took: a container's own
  // figures are its bracket's less its children's (a leaf has no children).
  struct Open {
    const char* pass = "";
    double host_start_us = 0;
    int64_t allocated = 0;
    gtl::LaunchCounts launches;
    gtl::HostSyncCounts syncs;
    size_t event = 0;  // its start and end events (GPU)
    double children_host_us = 0;
    int64_t children_allocated = 0;
    gtl::LaunchCounts children_launches;
    gtl::HostSyncCounts children_syncs;
    std::vector<size_t> children_events;
  };
  std::vector<Open> open;
  std::vector<gtl::Event> starts, ends;
  size_t last_end = 0;                         // the end event recorded last
  std::vector<std::vector<size_t>> op_events;  // per op: its events, then its children's

  double now_us() const {
    return std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now() - origin)
        .count();
  }
  bool recording() const { return in_step && warm && !finished; }
  // Every module is bracketed: a container's hooks see its children's work inside its own.
  void begin(gtl::nn::Module& m, const char* pass) {
    if (!recording()) return;
#ifdef GTL_HAVE_NVTX
    nvtxRangePushA((m.path() + " " + pass).c_str());
#endif
    Open o;
    o.pass = pass;
    if (timed) {
      o.event = starts.size();
      starts.emplace_back(true);
      starts.back().record(gtl::current_stream());
      ends.emplace_back(true);
    }
    o.host_start_us = now_us();
    o.allocated = gtl::current_allocator(device)->stats().allocated_bytes;
    o.launches = gtl::launch_counts();
    o.syncs = gtl::host_sync_counts();
    open.push_back(std::move(o));
  }
  // An op is recorded when its call ends: a leaf always, a container when it did work of its own
  // (its cost model prices some, or it launched something its children did not).
  void end(gtl::nn::Module& m) {
    if (!recording() || open.empty()) return;
    Open o = std::move(open.back());
    open.pop_back();
    const double host_us = now_us() - o.host_start_us;
    const int64_t allocated = gtl::current_allocator(device)->stats().allocated_bytes - o.allocated;
    const gtl::LaunchCounts launches = gtl::launch_counts() - o.launches;
    const gtl::HostSyncCounts syncs = gtl::host_sync_counts() - o.syncs;
    if (timed) {
      ends[o.event].record(gtl::current_stream());
      last_end = o.event;
    }
#ifdef GTL_HAVE_NVTX
    nvtxRangePop();
#endif
    OpRecord r;
    r.path = m.path();
    r.kind = m.kind();
    r.pass = o.pass;
    r.step = static_cast<int64_t>(steps.size()) - 1;
    r.input_shape = m.last_input_shape();
    r.cost = r.pass == "forward" ? m.forward_cost(r.input_shape) : m.backward_cost(r.input_shape);
    r.host_start_us = o.host_start_us;
    r.host_us = host_us - o.children_host_us;
    r.allocated_bytes = allocated - o.children_allocated;
    r.launches = launches - o.children_launches;
    r.syncs = syncs - o.children_syncs;
    const bool own_work = r.cost.flops > 0 || r.cost.bytes > 0 || r.launches.kernels > 0 ||
                          r.launches.library > 0 || r.launches.graphs > 0;
    if (m.is_leaf() || own_work) {
      ops.push_back(std::move(r));
      std::vector<size_t> events;
      if (timed) {
        events.push_back(o.event);
        events.insert(events.end(), o.children_events.begin(), o.children_events.end());
      }
      op_events.push_back(std::move(events));
    }
    if (!open.empty()) {
      Open& parent = open.back();
      parent.children_host_us += host_us;
      parent.children_allocated += allocated;
      parent.children_launches += launches;
      parent.children_syncs += syncs;
      if (timed) parent.children_events.push_back(o.event);
    }
  }
  // END SOLUTION(lab09)
};

OpProfiler::OpProfiler(gtl::nn::Module& model, gtl::Device device)
    : state_(std::make_unique<State>()) {
  // SOLUTION(lab09) step 1a
  State& s = *state_;
  s.device = device;
  s.timed = device.is_cuda() && gtl::cuda_available();
  gtl::nn::Hooks h;
  h.before_forward = [&s](gtl::nn::Module& m) { s.begin(m, "forward"); };
  h.after_forward = [&s](gtl::nn::Module& m) { s.end(m); };
  h.before_backward = [&s](gtl::nn::Module& m) { s.begin(m, "backward"); };
  h.after_backward = [&s](gtl::nn::Module& m) { s.end(m); };
  s.hooks = model.add_hooks(std::move(h));
  // END SOLUTION(lab09)
}

OpProfiler::~OpProfiler() = default;

void OpProfiler::begin_step() {
  // SOLUTION(lab09) step 1a
  State& s = *state_;
  s.in_step = true;
  if (s.warm && !s.finished) s.steps.push_back({s.now_us(), 0});
  // END SOLUTION(lab09)
}

void OpProfiler::end_step() {
  // SOLUTION(lab09) step 1a
  State& s = *state_;
  if (s.warm && !s.finished) s.steps.back().host_us = s.now_us() - s.steps.back().host_start_us;
  s.in_step = false;
  s.warm = true;
  // END SOLUTION(lab09)
}

void OpProfiler::finish() {
  // SOLUTION(lab09) step 1a
  State& s = *state_;
  if (s.finished) return;
  s.finished = true;
  if (!s.timed || s.ends.empty()) return;
  s.ends[s.last_end].synchronize();  // the last event recorded: every earlier one is complete
  const auto span_us = [&s](size_t e) {
    return 1e3 * gtl::Event::elapsed_ms(s.starts[e], s.ends[e]);
  };
  for (size_t i = 0; i < s.ops.size(); ++i) {
    const std::vector<size_t>& events = s.op_events[i];  // its own, then its children's
    double us = span_us(events[0]);
    for (size_t k = 1; k < events.size(); ++k) us -= span_us(events[k]);
    s.ops[i].device_us = us;
  }
  // END SOLUTION(lab09)
}

void OpProfiler::reset() {
  // SOLUTION(lab09) step 1a
  State& s = *state_;
  s.ops.clear();
  s.steps.clear();
  s.open.clear();
  s.starts.clear();
  s.ends.clear();
  s.op_events.clear();
  s.in_step = s.warm = s.finished = false;
  // END SOLUTION(lab09)
}

const std::vector<OpRecord>& OpProfiler::ops() const {
  return state_->ops;
}
const std::vector<StepSpan>& OpProfiler::steps() const {
  return state_->steps;
}

std::vector<OpRow> key_averages(const std::vector<OpRecord>& ops) {
  // SOLUTION(lab09) step 1b
  std::map<std::string, OpRow> rows;
  std::map<std::string, bool> all_timed;
  for (const OpRecord& op : ops) {
    const std::string key = op.kind + " " + op.pass;
    OpRow& r = rows[key];
    r.key = key;
    ++r.calls;
    r.flops += op.cost.flops;
    r.bytes += op.cost.bytes;
    r.allocated_bytes += op.allocated_bytes;
    r.launches += op.launches.kernels + op.launches.library;
    all_timed.emplace(key, true);
    if (op.device_us < 0) all_timed[key] = false;
  }
  for (const OpRecord& op : ops) {
    const std::string key = op.kind + " " + op.pass;
    rows[key].total_us += all_timed[key] ? op.device_us : op.host_us;
  }
  std::vector<OpRow> out;
  for (const auto& [key, row] : rows) out.push_back(row);
  std::stable_sort(out.begin(), out.end(),
                   [](const OpRow& a, const OpRow& b) { return a.total_us > b.total_us; });
  return out;
  // END SOLUTION(lab09)
}

std::string chrome_trace(const std::vector<OpRecord>& ops, const std::vector<StepSpan>& steps) {
  // SOLUTION(lab09) step 1c
  nlohmann::json events = nlohmann::json::array();
  for (size_t i = 0; i < steps.size(); ++i)
    events.push_back({{"name", "step " + std::to_string(i + 1)},
                      {"ph", "X"},
                      {"pid", 0},
                      {"tid", 0},
                      {"ts", steps[i].host_start_us},
                      {"dur", steps[i].host_us}});
  for (const OpRecord& op : ops)
    events.push_back({{"name", op.path + " " + op.pass},
                      {"ph", "X"},
                      {"pid", 0},
                      {"tid", 0},
                      {"ts", op.host_start_us},
                      {"dur", op.host_us},
                      {"args",
                       {{"flops", op.cost.flops},
                        {"bytes", op.cost.bytes},
                        {"allocated_bytes", op.allocated_bytes},
                        {"launches", op.launches.kernels + op.launches.library}}}});
  return nlohmann::json{{"traceEvents", events}}.dump();
  // END SOLUTION(lab09)
}

}  // namespace lab09
