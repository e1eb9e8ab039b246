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
  // TODO(lab06) step 4a: from here on, between uses, a rank holds only the shards (fsdp-memory
  //   is exact). Which full buffers does a freshly built FlatParameter hold? About 4 lines.
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
  // TODO(lab06) step 4b: on return unit u's full values exist and hold every rank's shard, and
  //   pending_[u] is empty. A gather prefetch(u) already issued (TODO 5) is not issued again.
  //   About 9 lines.
  (void)u;
  // END TODO(lab06)
}

void Fsdp::before_forward(int64_t u) {
  // TODO(lab06) step 4c: unit u's forward runs right after this returns (TODO 4 in the
  //   handout: what must u hold now? With prefetch_ > 0, TODO 5 too). About 2 lines.
  (void)u;
  // END TODO(lab06)
}

void Fsdp::after_forward(int64_t u) {
  // TODO(lab06) step 4d: unit u's forward has just returned. About 1 line.
  (void)u;
  // END TODO(lab06)
}

void Fsdp::before_backward(int64_t u) {
  // TODO(lab06) step 4e: unit u's backward runs right after this returns; it reads u's values
  //   and ACCUMULATES into u's grads(). With prefetch_ > 0, TODO 5 too. About 3 lines.
  (void)u;
  // END TODO(lab06)
}

void Fsdp::after_backward(int64_t u) {
  // TODO(lab06) step 4f: unit u's backward has just returned. Its optimizer's gradient must
  //   hold the average over ranks (as DDP's), and nothing full of u may outlive this hook.
  //   About 4 lines.
  (void)u;
  // END TODO(lab06)
}

void Fsdp::prefetch(int64_t u) {
  // TODO(lab06) step 5: start unit u's all-gather and return without waiting for it; its Work
  //   in pending_[u] (in_flight(u)) for gather(u). Nothing at all when u is out of range or its
  //   values are present or in flight. Where the hooks call it, and before or after gather(u),
  //   is yours to decide (the handout's TODO 5). About 6 lines here, 1 in each of two hooks.
  (void)u;
  // END TODO(lab06)
}

}  // namespace lab06
