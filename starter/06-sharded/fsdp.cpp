// Lab 06, TODOs 4 and 5: FSDP (ZeRO-3), the weights sharded too.
//
// Between uses a rank keeps only its shards (16P/N bytes). A unit's full weights exist only while
// it computes: gathered before its forward, freed after it, gathered again before its backward.
// The price is a third collective per unit (1.5x DDP's bytes); prefetch (TODO 5) hides it by
// issuing the next unit's gather while the current one computes, at the cost of one more unit
// held in memory.
#include "sharded.h"

namespace lab06 {

using gtl::dist::ReduceOp;
using gtl::nn::Module;

Fsdp::Fsdp(Communicator& comm, Module& model, std::vector<Unit>& units, int prefetch)
    : comm_(comm), units_(units), prefetch_(prefetch), pending_(units.size()) {
  for (std::size_t u = 0; u < units_.size(); ++u) {
    index_[units_[u].module] = static_cast<int64_t>(u);
  }
  // The hooks fire for every module of the model; only the units' modules matter here.
  auto on_unit = [this](void (Fsdp::*fn)(int64_t)) {
    return [this, fn](Module& m) {
      const auto it = index_.find(&m);
      if (it != index_.end()) (this->*fn)(it->second);
    };
  };
  gtl::nn::Hooks hooks;
  hooks.before_forward = on_unit(&Fsdp::before_forward);
  hooks.after_forward = on_unit(&Fsdp::after_forward);
  hooks.before_backward = on_unit(&Fsdp::before_backward);
  hooks.after_backward = on_unit(&Fsdp::after_backward);
  hooks_ = model.add_hooks(std::move(hooks));
  // TODO(lab06) step 4a: between uses a rank keeps only the shards: free every unit's full
  //   values and gradients. About 4 lines.
  // END TODO(lab06)
}

std::vector<ParamRef> Fsdp::shard_params() const {
  std::vector<ParamRef> params;
  for (const Unit& unit : units_) {
    if (std::optional<ParamRef> p = unit.flat->shard_param()) params.push_back(*p);
  }
  return params;
}

void Fsdp::gather(int64_t u) {
  // TODO(lab06) step 4b: unit u's full values present and filled. If pending_[u] holds a
  //   prefetch, wait for it and clear it; else materialise the values and all-gather the shard
  //   into them now. About 9 lines.
  (void)u;
  // END TODO(lab06)
}

void Fsdp::before_forward(int64_t u) {
  // TODO(lab06) step 4c: gather u; with prefetch_ > 0, then prefetch(u + 1). About 2 lines.
  (void)u;
  // END TODO(lab06)
}

void Fsdp::after_forward(int64_t u) {
  // TODO(lab06) step 4d: unit u's full values freed. About 1 line.
  (void)u;
  // END TODO(lab06)
}

void Fsdp::before_backward(int64_t u) {
  // TODO(lab06) step 4e: gather u again, its full gradient materialised (zeros); with
  //   prefetch_ > 0, then prefetch(u - 1): backward walks the units in reverse. About 3 lines.
  (void)u;
  // END TODO(lab06)
}

void Fsdp::after_backward(int64_t u) {
  // TODO(lab06) step 4f: free u's values, reduce-scatter (Avg) its full gradient into its
  //   shard_grads(), free the full gradient. About 4 lines.
  (void)u;
  // END TODO(lab06)
}

void Fsdp::prefetch(int64_t u) {
  // TODO(lab06) step 5: issue unit u's gather without waiting for it (all_gather_async into
  //   its freshly materialised values), its Work kept in pending_[u]. Nothing when u is out of
  //   range or its values are present or in flight. About 6 lines.
  (void)u;
  // END TODO(lab06)
}

}  // namespace lab06
