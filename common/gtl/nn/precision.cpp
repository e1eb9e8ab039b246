// The per-thread precision policy (see precision.h).
#include "gtl/nn/precision.h"

namespace gtl::nn {

namespace {
thread_local PrecisionPolicy t_policy;
}  // namespace

PrecisionPolicy PrecisionPolicy::parse(const std::string& name) {
  if (name == "fp32") return fp32();
  if (name == "tf32") return tf32_policy();
  if (name == "bf16") return bf16();
  if (name == "fp16") return fp16();
  throw Error("unknown precision '" + name + "': expected fp32, tf32, fp16 or bf16");
}

std::string PrecisionPolicy::name() const {
  switch (compute) {
    case DType::BFloat16:
      return "bf16";
    case DType::Float16:
      return "fp16";
    default:
      return tf32 ? "tf32" : "fp32";
  }
}

const PrecisionPolicy& current_precision() {
  return t_policy;
}

Tensor cast_to(const Tensor& x, DType dtype) {
  return x.dtype() == dtype ? x : x.to(dtype);
}

Tensor cast_to_compute(const Tensor& x) {
  return cast_to(x, t_policy.compute);
}

Tensor weight_as(const ParamRef& p, DType dtype) {
  if (p.compute.defined() && p.compute.dtype() == dtype) return p.compute;
  return cast_to(p.value, dtype);
}

void add_compute_copies(const std::vector<ParamRef*>& params, DType dtype) {
  GTL_CHECK(dtype == DType::BFloat16 || dtype == DType::Float16,
            "add_compute_copies: a compute copy is fp16 or bf16, got " << dtype_name(dtype));
  for (ParamRef* p : params) p->compute = p->value.to(dtype);
}

PrecisionScope::PrecisionScope(const PrecisionPolicy& policy)
    : previous_(t_policy), tf32_(policy.tf32) {
  t_policy = policy;
}

PrecisionScope::~PrecisionScope() {
  t_policy = previous_;
}

}  // namespace gtl::nn
