// Found-inf agreement and global-norm clipping over sharded gradients (see sharded_grads.h).
#include "gtl/distributed/sharded_grads.h"

#include "gtl_reference_guard.h"  // grader/channel: the references refuse to run in a student call

#include <cmath>

#include "gtl/ops/global_norm.h"
#include "gtl/optim/grad_clip.h"

namespace gtl::dist {

void all_reduce_found_inf(optim::LossScaler& scaler, Communicator& group, Device device) {
  gtl::grading::reference_guard("gtl::dist::all_reduce_found_inf");
  if (!scaler.enabled()) return;
  const Tensor& local = scaler.found_inf_flag();
  Tensor flag = Tensor::zeros({1}, DType::Float32, device);
  if (local.defined()) flag.copy_(local);
  group.all_reduce(flag, ReduceOp::Max);
  scaler.set_found_inf_flag(flag);
}

Tensor clip_grad_norm_(const std::vector<optim::ParamRef>& shard_params, float max_norm,
                       Communicator& group, Device device) {
  gtl::grading::reference_guard("gtl::dist::clip_grad_norm_");
  GTL_CHECK(max_norm > 0.f, "dist::clip_grad_norm_: max_norm must be > 0, got " << max_norm);
  if (group.world_size() == 1) {
    // One rank holds everything: exactly the unsharded computation.
    if (!shard_params.empty()) return optim::clip_grad_norm_(shard_params, max_norm);
    return Tensor::zeros({1}, DType::Float32, device);
  }
  std::vector<Tensor> grads;
  for (const optim::ParamRef& p : shard_params) grads.push_back(p.grad);
  const float local = grads.empty() ? 0.f : ops::global_l2_norm(grads).item();
  // On `device`: NCCL reduces only device memory.
  Tensor squared = Tensor::full({1}, double(local) * double(local), DType::Float32, device);
  group.all_reduce(squared, ReduceOp::Sum);
  const Tensor norm = Tensor::full({1}, std::sqrt(double(squared.item())), DType::Float32, device);
  optim::scale_by_clip_coef_(shard_params, norm, max_norm);
  return norm;
}

}  // namespace gtl::dist
