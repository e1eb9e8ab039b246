// Forward and backward steps of a model under Fsdp (one, or several on the same model and Fsdp:
// fsdp_steps), on every rank of an in-process world, with each step's module trace recorded and an
// observer that sees which units hold full values and gradients at each of their hooks (installed
// after Fsdp's, so it sees the state Fsdp's hook left).
#pragma once

#include <algorithm>
#include <functional>
#include <mutex>
#include <set>
#include <sstream>
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

// Checks rank 0's lines (timeline_of) of one forward and backward against the order an FSDP with
// prefetch distance `distance` (0: just in time; 1: one unit ahead) produces. Returns "" when every
// line fits, else the first line that does not: what was seen there and which property failed
// (the handout's TODOs 4 and 5 ask what the order must be). Sizes are all a line shows, so two
// units of one size (the residual blocks) are told apart by their place only.
inline std::string order_problem(const FsdpStep& step, int distance) {
  const std::vector<std::string> lines = timeline_of(step);
  const int64_t units = static_cast<int64_t>(step.padded.size());
  const auto bytes = [&](int64_t u) { return 4 * step.padded[static_cast<std::size_t>(u)]; };
  const char* passes[] = {"forward", "backward"};
  int pass = 0;             // 0 forward, 1 backward, 2 done
  int64_t computed = 0;     // units of this pass computed so far
  int64_t gathered = 0;     // units of this pass whose gather was issued
  int64_t reduce_due = -1;  // the unit whose backward ended and whose reduce-scatter is due
  // The unit at place i of the pass's order.
  const auto unit_at = [&](int64_t i) { return pass == 0 ? i : units - 1 - i; };
  const auto unit_text = [&](int64_t u) {
    return "unit " + std::to_string(u) + " (" + std::to_string(bytes(u)) + " B)";
  };
  const std::string at_distance = " (prefetch distance " + std::to_string(distance) + ")";
  for (std::size_t i = 0; i < lines.size(); ++i) {
    const std::string& line = lines[i];
    const auto problem = [&](const std::string& property, const std::string& seen) {
      return "line " + std::to_string(i) + ", '" + line + "': " + seen +
             ". Property failed: " + property;
    };
    std::istringstream in(line);
    std::string what, size;
    in >> what >> size;
    if (what == "forward" || what == "backward") {
      const int64_t u = std::stoll(size);
      if (pass == 2 || what != passes[pass] || u != unit_at(computed))
        return problem("the model's order (forward 0 .. U-1, then backward U-1 .. 0)",
                       pass == 2 ? "the step computed every unit already"
                                 : std::string("expected ") + passes[pass] + " " +
                                       std::to_string(unit_at(computed)));
      if (reduce_due >= 0)
        return problem("averaged gradients",
                       unit_text(u) + " computed while the gradient of " + unit_text(reduce_due) +
                           ", whose backward had ended, was not yet reduce-scattered");
      if (gathered <= computed)
        return problem("current values",
                       unit_text(u) + " computed while its values were not yet gathered in this " +
                           passes[pass] + " pass");
      const int64_t ahead = std::min(computed + 1 + distance, units);
      if (gathered < ahead)
        return problem("overlap" + at_distance,
                       unit_text(u) + " computed while the gather of " +
                           unit_text(unit_at(gathered)) +
                           " had not been issued: none of that gather could overlap this compute");
      ++computed;
      if (pass == 1) reduce_due = u;
      if (computed == units) {  // the pass is done
        ++pass;
        computed = 0;
        gathered = 0;
      }
      continue;
    }
    const bool async = what.find("(async)") != std::string::npos;
    const int64_t got = std::stoll(size);
    if (what.rfind("reduce", 0) == 0) {
      if (reduce_due < 0)
        return problem("averaged gradients",
                       pass == 0 ? "a reduce-scatter in the forward pass, where no gradient exists"
                                 : "a reduce-scatter with no unit's backward ended since the last "
                                   "one: a gradient reduced twice, or before its backward");
      if (got != bytes(reduce_due) || async)
        return problem("averaged gradients",
                       std::string("expected a synchronous reduce-scatter of ") +
                           unit_text(reduce_due) + ", whose backward had just ended, got " +
                           std::to_string(got) + " B" + (async ? ", asynchronous" : ""));
      reduce_due = -1;
      continue;
    }
    if (reduce_due >= 0)
      return problem("averaged gradients", "a gather came between the backward of " +
                                               unit_text(reduce_due) +
                                               " and the reduce-scatter of its gradient");
    if (pass == 2 || gathered == units)
      return problem("one gather per unit and pass", std::string("every unit of the ") +
                                                         passes[pass == 2 ? 1 : pass] +
                                                         " pass had been gathered already: one "
                                                         "gather more than the pass has units");
    const int64_t next = unit_at(gathered);
    if (!async && gathered > computed && got == bytes(unit_at(computed)))
      return problem("one gather per unit and pass",
                     unit_text(unit_at(computed)) +
                         ", gathered already in this pass ahead of its compute, was gathered a "
                         "second time: its bytes crossed the wire twice");
    if (got != bytes(next))
      return problem("the pass's order", "expected a gather of " + unit_text(next) +
                                             ", the next unit of this pass not yet gathered, got " +
                                             std::to_string(got) + " B");
    if (gathered > computed + distance)
      return problem("memory" + at_distance,
                     "this gather is " + std::to_string(gathered - computed) +
                         " unit(s) ahead of " + unit_text(unit_at(computed)) +
                         ", which computes next: every unit gathered ahead is held in memory");
    if (async != (gathered > computed))
      return problem("overlap" + at_distance,
                     gathered > computed
                         ? "the gather of " + unit_text(next) + ", ahead of " +
                               unit_text(unit_at(computed)) +
                               " which computes next, was synchronous: the hook that issued it "
                               "waited for it, so nothing overlapped it"
                         : "the gather of " + unit_text(next) +
                               ", which computes next, was issued asynchronously only now, with "
                               "no compute left before it to overlap");
    ++gathered;
  }
  if (pass != 2)
    return "the step ended before every unit's forward and backward (after line " +
           std::to_string(lines.size()) + ")";
  if (reduce_due >= 0)
    return "the step ended with the gradient of " + unit_text(reduce_due) +
           " never reduce-scattered. Property failed: averaged gradients";
  return "";
}

}  // namespace lab06::testing
