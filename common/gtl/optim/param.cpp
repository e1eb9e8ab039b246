// Parameter lists: naming, validation and zeroing (see param.h).
#include "gtl/optim/param.h"

#include <set>

namespace gtl::optim {

std::string param_name(const std::vector<ParamRef>& params, std::size_t i) {
  return params[i].name.empty() ? "param" + std::to_string(i) : params[i].name;
}

void check_params(const char* who, const std::vector<ParamRef>& params) {
  std::set<std::string> names;
  for (std::size_t i = 0; i < params.size(); ++i) {
    const ParamRef& p = params[i];
    const std::string name = param_name(params, i);
    GTL_CHECK(p.value.defined() && p.grad.defined(),
              who << ": parameter '" << name << "' needs both a value and a grad tensor");
    GTL_CHECK(is_floating(p.value.dtype()), who << ": parameter '" << name
                                                << "' must be floating point, got "
                                                << dtype_name(p.value.dtype()));
    GTL_CHECK(p.grad.shape() == p.value.shape() && p.grad.dtype() == p.value.dtype() &&
                  p.grad.device() == p.value.device(),
              who << ": the grad of '" << name << "' must match its value: value " << p.value.str(0)
                  << ", grad " << p.grad.str(0));
    if (p.compute.defined()) {
      GTL_CHECK(p.value.dtype() == DType::Float32 && p.compute.dtype() != DType::Float32 &&
                    is_floating(p.compute.dtype()),
                who << ": '" << name << "': a compute copy (fp16/bf16) goes with a float32 "
                    << "master value, got value " << dtype_name(p.value.dtype()) << " and compute "
                    << dtype_name(p.compute.dtype()));
      GTL_CHECK(p.compute.shape() == p.value.shape() && p.compute.device() == p.value.device(),
                who << ": the compute copy of '" << name << "' must have the value's shape and "
                    << "device: value " << p.value.str(0) << ", compute " << p.compute.str(0));
    }
    GTL_CHECK(names.insert(name).second, who << ": two parameters are named '" << name << "'");
  }
}

void zero_grad(const std::vector<ParamRef>& params) {
  for (const ParamRef& p : params) Tensor(p.grad).zero_();
}

std::vector<Tensor> grads_of(const std::vector<ParamRef>& params) {
  std::vector<Tensor> grads;
  grads.reserve(params.size());
  for (const ParamRef& p : params) grads.push_back(p.grad);
  return grads;
}

}  // namespace gtl::optim
