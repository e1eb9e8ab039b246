// The fused SGD kernel launch (sgd.cu); internal to the optimizer, use optim::Sgd.
#pragma once

#include "gtl/optim/param.h"
#include "gtl/optim/update_rules.h"

namespace gtl::optim::cuda {

// One kernel over the parameter: reads p, g, buf; writes p, buf and the compute copy if any.
// `momentum_buffer` is undefined when s.use_momentum is false.
void sgd_step(const ParamRef& param, const Tensor& momentum_buffer, const rules::SgdScalars& s);

}  // namespace gtl::optim::cuda
