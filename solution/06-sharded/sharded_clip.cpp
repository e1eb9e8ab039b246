// Lab 06, TODO 7: the loss scaler's skip decision and gradient clipping over shards.
//
// Two scalars decide a step for everybody: "did any gradient overflow?" and "how long is the
// whole gradient?". With shards each rank knows only its part of each, so each is reduced over the
// ranks before anyone acts on it. Every rank then takes the same decision from the same number.
#include <cmath>

#include "gtl/ops/global_norm.h"
#include "gtl/optim/grad_clip.h"
#include "sharded.h"

namespace lab06 {

using gtl::dist::ReduceOp;

void agree_found_inf(Communicator& comm, gtl::optim::LossScaler& scaler) {
  // SOLUTION(lab06) step 7: the flag's maximum over ranks
  if (!scaler.enabled()) return;
  Tensor flag = Tensor::zeros({1});
  if (scaler.found_inf_flag().defined()) flag.copy_(scaler.found_inf_flag());
  comm.all_reduce(flag, ReduceOp::Max);
  scaler.set_found_inf_flag(flag);
  // END SOLUTION(lab06)
}

float clip_sharded_grad_norm_(Communicator& comm, const std::vector<ParamRef>& shard_params,
                              float max_norm) {
  // SOLUTION(lab06) step 7: sum of squared shard norms over ranks, then one coefficient
  std::vector<Tensor> grads;
  for (const ParamRef& p : shard_params) grads.push_back(p.grad);
  const double local = grads.empty() ? 0.0 : double(gtl::ops::global_l2_norm(grads).item());
  Tensor squared = Tensor::full({1}, local * local);
  comm.all_reduce(squared, ReduceOp::Sum);
  const float norm = static_cast<float>(std::sqrt(double(squared.item())));
  if (!shard_params.empty()) {
    gtl::optim::scale_by_clip_coef_(shard_params, Tensor::full({1}, norm), max_norm);
  }
  return norm;
  // END SOLUTION(lab06)
}

}  // namespace lab06
