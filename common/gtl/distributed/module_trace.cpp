// Module events from hooks (see module_trace.h).
#include "gtl/distributed/module_trace.h"

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

}  // namespace

nn::HookHandle trace_modules(nn::Module& model, std::shared_ptr<Trace> trace) {
  GTL_CHECK(trace != nullptr, "trace_modules: no trace to record into");
  nn::Hooks hooks;
  hooks.before_forward = [trace](nn::Module& m) {
    trace->record(module_event(TraceKind::ModuleBegin, "forward", m));
  };
  hooks.after_forward = [trace](nn::Module& m) {
    TraceEvent e = module_event(TraceKind::ModuleEnd, "forward", m);
    if (e.leaf) {
      const nn::ComputeCost cost = m.forward_cost(m.last_input_shape());
      e.flops = cost.flops;
      e.mem_bytes = cost.bytes;
    }
    trace->record(std::move(e));
  };
  hooks.before_backward = [trace](nn::Module& m) {
    trace->record(module_event(TraceKind::ModuleBegin, "backward", m));
  };
  hooks.after_backward = [trace](nn::Module& m) {
    TraceEvent e = module_event(TraceKind::ModuleEnd, "backward", m);
    if (e.leaf) {
      const nn::ComputeCost cost = m.backward_cost(m.last_input_shape());
      e.flops = cost.flops;
      e.mem_bytes = cost.bytes;
    }
    trace->record(std::move(e));
  };
  return model.add_hooks(std::move(hooks));
}

}  // namespace gtl::dist
