// The tied head of the GPT (GPT-2's weight tying): logits = h W^T, the token table W [V, D] read
// as the output projection. GPT and GPTStage own the table as their "wte" child and call these
// from their forward and backward, so the head computes, saves and costs the same in both.
#pragma once

#include "gtl/nn/module.h"

namespace gtl::nn::tied_head {

// h [N, D] float32 -> logits [N, V]; saves h in the compute dtype (ctx.saved) for the backward.
Tensor forward(const Tensor& h, const ParamRef& table, Context& ctx);

// Returns dh = dlogits W [N, D] (compute dtype) and frees what forward saved. The table's
// gradient dlogits^T h [V, D] goes into table.grad with `mode`: by one GEMM in place when the
// dtypes agree, else through `write` (the caller's Module::write_grad, which converts it).
using WriteGrad = void (*)(const ParamRef&, const Tensor&, GradMode);
Tensor backward(Context& ctx, const Tensor& dlogits, const ParamRef& table, GradMode mode,
                WriteGrad write);

// The head's GEMMs on `rows` = B*T rows of a model of width dim and vocabulary vocab, in the
// current precision's compute dtype.
ComputeCost forward_cost(int64_t rows, int64_t dim, int64_t vocab);
ComputeCost backward_cost(int64_t rows, int64_t dim, int64_t vocab);

}  // namespace gtl::nn::tied_head
