// The fused AdamW kernel launch (adamw.cu); internal to the optimizer, use optim::AdamW.
#pragma once

#include "gtl/optim/param.h"
#include "gtl/optim/update_rules.h"

namespace gtl::optim::cuda {

// One kernel over the parameter: reads p, g, m, v; writes p, m, v and the compute copy if any.
void adamw_step(const ParamRef& param, const Tensor& m, const Tensor& v,
                const rules::AdamWScalars& s);

}  // namespace gtl::optim::cuda
