// Module events from hooks (see module_trace.h).
#include "gtl/distributed/module_trace.h"

#include <string>

namespace gtl::dist {

namespace {

TraceEvent module_event(TraceKind kind, const char* pass, const nn::Module& m) {
  TraceEvent e;
  e.kind = kind;
  e.op = pass;
  e.module = m.path();
  e.module_kind = m.kind();
  e.leaf = m.is_leaf();
  return e;
}

// The end of a pass: a leaf carries the FLOPs and bytes of the pass that just ended.
TraceEvent end_event(const char* pass, const nn::Module& m) {
  TraceEvent e = module_event(TraceKind::ModuleEnd, pass, m);
  if (e.leaf) {
    const bool forward = std::string(pass) == "forward";
    const nn::ComputeCost cost =
        forward ? m.forward_cost(m.last_input_shape()) : m.backward_cost(m.last_input_shape());
    e.flops = cost.flops;
    e.mem_bytes = cost.bytes;
  }
  return e;
}

}  // namespace

nn::HookHandle trace_modules(nn::Module& model, std::shared_ptr<Trace> trace) {
  GTL_CHECK(trace != nullptr, "trace_modules: no trace to record into");
  nn::Hooks hooks;
  hooks.before_forward = [trace](nn::Module& m) {
    trace->record(module_event(TraceKind::ModuleBegin, "forward", m));
  };
  hooks.after_forward = [trace](nn::Module& m) { trace->record(end_event("forward", m)); };
  hooks.before_backward = [trace](nn::Module& m) {
    trace->record(module_event(TraceKind::ModuleBegin, "backward", m));
  };
  hooks.after_backward = [trace](nn::Module& m) { trace->record(end_event("backward", m)); };
  return model.add_hooks(std::move(hooks));
}

}  // namespace gtl::dist
