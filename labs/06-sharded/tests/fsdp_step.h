// Forward and backward steps of a model under Fsdp (one, or several on the same model and Fsdp:
// fsdp_steps), on every rank of an in-process world, with each step's module trace recorded and an
// observer that sees which units hold full values and gradients at each of their hooks (installed
// after Fsdp's, so it sees the state Fsdp's hook left).
#pragma once

#include <functional>
#include <mutex>
#include <set>
#include <string>
#include <vector>

#include "gtl/distributed/in_process.h"
#include "gtl/distributed/module_trace.h"
#include "lab06_student_call.h"
#include "lab06_test_util.h"

namespace lab06::testing {

// What the observer saw at one hook of one unit.
struct Seen {
  std::string hook;  // "before_forward", "after_forward", "before_backward", "after_backward"
  int64_t unit = 0;
  std::set<int64_t> with_values, with_grads;  // the units whose full buffers exist
  int64_t allocated = 0;                      // the rank's allocated bytes at that moment
};

struct FsdpStep {
  std::vector<std::vector<gtl::dist::TraceEvent>> traces;  // per rank
  std::vector<Seen> seen;                                  // rank 0's
  std::vector<std::string> unit_paths;                     // each unit's module path
  std::vector<int64_t> padded;                             // each unit's padded_numel
};

// `steps` forward and backward passes on the same model and Fsdp, one FsdpStep each (its traces
// and hooks seen only its own). The second step is where state kept from the first shows: a
// prefetch that happens only once gathers the second step just in time.
inline std::vector<FsdpStep> fsdp_steps(int world, const gtl::nn::ModelConfig& config,
                                        int64_t batch, int prefetch, int steps) {
  namespace nn = gtl::nn;
  std::vector<FsdpStep> out(static_cast<std::size_t>(steps));
  for (FsdpStep& step : out) step.traces.resize(static_cast<std::size_t>(world));
  std::mutex mutex;
  gtl::dist::run_ranks(
      world,
      [&](Communicator& comm) {
        auto model = nn::make_model(config);
        std::vector<Unit> units = make_units(*model, comm);
        Fsdp fsdp = [&] {  // the student's constructor inside TODO 4's scope
          const auto call = lab06_student_call::todo4();
          return Fsdp(comm, *model, units, prefetch);
        }();
        std::vector<Seen> seen;
        auto observe = [&](const char* hook) {
          return [&, hook](nn::Module& m) {
            for (std::size_t u = 0; u < units.size(); ++u) {
              if (units[u].module != &m) continue;
              Seen s{hook,
                     static_cast<int64_t>(u),
                     {},
                     {},
                     gtl::current_allocator(gtl::Device::cpu())->stats().allocated_bytes};
              for (std::size_t v = 0; v < units.size(); ++v) {
                if (units[v].flat->has_values()) s.with_values.insert(static_cast<int64_t>(v));
                if (units[v].flat->has_grads()) s.with_grads.insert(static_cast<int64_t>(v));
              }
              seen.push_back(s);
            }
          };
        };
        nn::Hooks hooks;
        hooks.before_forward = observe("before_forward");
        hooks.after_forward = observe("after_forward");
        hooks.before_backward = observe("before_backward");
        hooks.after_backward = observe("after_backward");
        nn::HookHandle observer = model->add_hooks(std::move(hooks));
        nn::HookHandle traced = gtl::dist::trace_modules(*model, comm.trace());
        std::vector<std::vector<gtl::dist::TraceEvent>> traces;  // per step
        std::vector<std::vector<Seen>> seen_by_step;
        std::size_t begin = 0;  // the first event of this step in the rank's trace
        for (int k = 0; k < steps; ++k) {
          seen.clear();
          nn::Context ctx;
          {  // the hooks call the student's Fsdp (TODOs 4 and 5): TODO 4's scope
            const auto call = lab06_student_call::todo4();
            Tensor y = model->forward(Tensor::full({batch, 1, 28, 28}, 0.5), ctx);
            model->backward(ctx, Tensor::ones(y.shape()));
          }
          comm.synchronize();
          const std::vector<gtl::dist::TraceEvent> events = comm.trace()->events();
          traces.emplace_back(events.begin() + static_cast<std::ptrdiff_t>(begin), events.end());
          begin = events.size();
          seen_by_step.push_back(seen);
        }
        std::lock_guard<std::mutex> lock(mutex);
        for (std::size_t k = 0; k < out.size(); ++k) {
          out[k].traces[static_cast<std::size_t>(comm.rank())] = traces[k];
        }
        if (comm.rank() != 0) return;
        for (std::size_t k = 0; k < out.size(); ++k) {
          out[k].seen = seen_by_step[k];
          for (const Unit& u : units) {
            for (std::size_t i = 0; i < model->size(); ++i) {
              if (&(*model)[i] == u.module) out[k].unit_paths.push_back(std::to_string(i));
            }
            out[k].padded.push_back(u.flat->padded_numel());
          }
        }
      },
      fast(false));
  return out;
}

// One forward and backward.
inline FsdpStep fsdp_step(int world, const gtl::nn::ModelConfig& config, int64_t batch,
                          int prefetch) {
  return fsdp_steps(world, config, batch, prefetch, 1).front();
}

// Rank 0's gathers and reduce-scatters (named by their size: "gather 33664 B") and the
// ModuleBegin of each unit's forward or backward ("forward 2"), in order. Two units of one size
// (the residual blocks) cannot be told apart by a collective, so the size is what is compared.
// "gather 33664 B", "reduce(async) 1320 B".
inline std::string collective(const std::string& what, int64_t bytes, bool async = false) {
  return what + (async ? "(async) " : " ") + std::to_string(bytes) + " B";
}

inline std::vector<std::string> timeline_of(const FsdpStep& step) {
  std::vector<std::string> out;
  for (const gtl::dist::TraceEvent& e : step.traces[0]) {
    if (e.op == "all_gather" || e.op == "reduce_scatter") {
      out.push_back(collective(e.op == "all_gather" ? "gather" : "reduce", e.bytes, e.async));
    } else if (e.kind == gtl::dist::TraceKind::ModuleBegin) {
      for (std::size_t u = 0; u < step.unit_paths.size(); ++u) {
        if (e.module == step.unit_paths[u]) out.push_back(e.op + " " + std::to_string(u));
      }
    }
  }
  return out;
}

}  // namespace lab06::testing
