// Lab 06, TODOs 4 and 5: FSDP (ZeRO-3), the weights sharded too.
//
// Between uses a rank keeps only its shards (16P/N bytes). A unit's full weights exist only while
// it computes. The price is 1.5x DDP's bytes; prefetch (TODO 5) hides the gathers behind compute
// at the cost of one more unit held in memory.
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
  // TODO(lab06) step 4: FSDP's unit lifecycle, over this constructor, gather(u) and the four
  //   hooks. Spec (the handout's TODO 4): from the end of this constructor on, a rank holds the
  //   units' shards and, beyond them, full buffers of at most the unit that computes (fsdp-memory
  //   measures every byte at every hook); while u computes, its layers read its full values, the
  //   current weights of every rank's shard; when after_backward(u) returns, the gradient u's
  //   optimizer reads (shard_param()) holds this step's gradient averaged over ranks, as DDP's.
  //   gather(u) is the one place that fills a unit's full values (sharded.h). Every rank issues
  //   the same collectives in unit order, and the step sends 1.5x DDP's bytes with no all-reduce:
  //   account for every byte before you write. Decide what each of the six functions does. About
  //   22 lines over the six (TODO 5's calls not counted).
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
  // TODO(lab06) step 4 (gather): the spec is in the constructor and at gather in sharded.h.
  (void)u;
  // END TODO(lab06)
}

void Fsdp::before_forward(int64_t u) {
  // TODO(lab06) step 4 (forward starts): the spec is in the constructor.
  (void)u;
  // END TODO(lab06)
  // TODO(lab06) step 5 (prefetch from before_forward?): the spec is at prefetch(u). This hook's
  //   call, if it needs one; in a hook that needs none, replace this comment with why.
  // END TODO(lab06)
}

void Fsdp::after_forward(int64_t u) {
  // TODO(lab06) step 4 (forward done): the spec is in the constructor.
  (void)u;
  // END TODO(lab06)
  // TODO(lab06) step 5 (prefetch from after_forward?): the spec is at prefetch(u). This hook's
  //   call, if it needs one; in a hook that needs none, replace this comment with why.
  // END TODO(lab06)
}

void Fsdp::before_backward(int64_t u) {
  // TODO(lab06) step 4 (backward starts): the spec is in the constructor; u's backward writes
  //   into its views of u's grads().
  (void)u;
  // END TODO(lab06)
  // TODO(lab06) step 5 (prefetch from before_backward?): the spec is at prefetch(u). This hook's
  //   call, if it needs one; in a hook that needs none, replace this comment with why.
  // END TODO(lab06)
}

void Fsdp::after_backward(int64_t u) {
  // TODO(lab06) step 4 (backward done): the spec is in the constructor.
  (void)u;
  // END TODO(lab06)
  // TODO(lab06) step 5 (prefetch from after_backward?): the spec is at prefetch(u). This hook's
  //   call, if it needs one; in a hook that needs none, replace this comment with why.
  // END TODO(lab06)
}

void Fsdp::prefetch(int64_t u) {
  // TODO(lab06) step 5: start unit u's all-gather and return without waiting for it; its Work
  //   in pending_[u] (in_flight(u)) for gather(u). Nothing at all when u is out of range or its
  //   values are present or in flight. Which hooks call it, and for which unit, is yours to
  //   decide (the handout's TODO 5). About 6 lines here, and 1 in each hook that
  //   calls it (the hooks' step 5 regions).
  (void)u;
  // END TODO(lab06)
}

}  // namespace lab06
