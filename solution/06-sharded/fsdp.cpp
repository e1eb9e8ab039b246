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
  // SOLUTION(lab06) step 4: between uses only the shards stay
  for (Unit& unit : units_) {
    unit.flat->release_values();
    unit.flat->release_grads();
  }
  // END SOLUTION(lab06)
}

std::vector<ParamRef> Fsdp::shard_params() const {
  std::vector<ParamRef> params;
  for (const Unit& unit : units_) {
    if (std::optional<ParamRef> p = unit.flat->shard_param()) params.push_back(*p);
  }
  return params;
}

void Fsdp::gather(int64_t u) {
  // SOLUTION(lab06) step 4: the prefetched gather, or one now
  std::optional<gtl::dist::Work>& pending = pending_[static_cast<std::size_t>(u)];
  if (pending) {
    pending->wait();
    pending.reset();
    return;
  }
  gtl::nn::FlatParameter& flat = *units_[static_cast<std::size_t>(u)].flat;
  flat.materialize_values();
  comm_.all_gather(flat.shard_values(), flat.values());
  // END SOLUTION(lab06)
}

void Fsdp::before_forward(int64_t u) {
  // SOLUTION(lab06) step 4: u's full values
  gather(u);
  // END SOLUTION(lab06)
  // SOLUTION(lab06) step 5: u + 1's gather runs during u's forward
  if (prefetch_ > 0) prefetch(u + 1);
  // END SOLUTION(lab06)
}

void Fsdp::after_forward(int64_t u) {
  // SOLUTION(lab06) step 4 (forward done): free the full values
  units_[static_cast<std::size_t>(u)].flat->release_values();
  // END SOLUTION(lab06)
  // SOLUTION(lab06) step 5: none: u's forward is over, nothing is left for a gather to overlap
  // END SOLUTION(lab06)
}

void Fsdp::before_backward(int64_t u) {
  // SOLUTION(lab06) step 4: gather again, a zeroed full gradient
  gather(u);
  units_[static_cast<std::size_t>(u)].flat->materialize_grads();
  // END SOLUTION(lab06)
  // SOLUTION(lab06) step 5: u - 1 computes next in backward: its gather runs during u's backward
  if (prefetch_ > 0) prefetch(u - 1);
  // END SOLUTION(lab06)
}

void Fsdp::after_backward(int64_t u) {
  // SOLUTION(lab06) step 4 (backward done): free the values, keep only the averaged gradient shard
  gtl::nn::FlatParameter& flat = *units_[static_cast<std::size_t>(u)].flat;
  flat.release_values();
  comm_.reduce_scatter(flat.grads(), flat.shard_grads(), ReduceOp::Avg);
  flat.release_grads();
  // END SOLUTION(lab06)
  // SOLUTION(lab06) step 5: none: u's backward is over
  // END SOLUTION(lab06)
}

void Fsdp::prefetch(int64_t u) {
  // SOLUTION(lab06) step 5: an asynchronous gather into fresh full values
  if (u < 0 || u >= num_units()) return;
  gtl::nn::FlatParameter& flat = *units_[static_cast<std::size_t>(u)].flat;
  if (flat.has_values() || pending_[static_cast<std::size_t>(u)]) return;
  flat.materialize_values();
  pending_[static_cast<std::size_t>(u)] =
      comm_.all_gather_async(flat.shard_values(), flat.values());
  // END SOLUTION(lab06)
}

}  // namespace lab06
