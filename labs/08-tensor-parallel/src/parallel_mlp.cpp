// The tensor-parallel MLP (tensor_parallel.h): your column- and row-parallel layers around the
// core's GELU. No communication of its own: fc1's f and fc2's g are all of it.
#include "gtl/nn/activation.h"
#include "tensor_parallel.h"

namespace lab08 {

ParallelMLP::ParallelMLP(const nn::Linear& fc1, const nn::Linear& fc2, Communicator& tp)
    : Module("parallel_mlp") {
  add_child("fc1", std::make_unique<ColumnParallelLinear>(fc1, tp));
  add_child("gelu", std::make_unique<nn::GELU>());
  add_child("fc2", std::make_unique<RowParallelLinear>(fc2, tp));
}

Tensor ParallelMLP::forward_impl(const Tensor& x, nn::Context& ctx) {
  ctx.children.resize(3);
  Tensor h = children_[0]->forward(x, ctx.children[0]);
  h = children_[1]->forward(h, ctx.children[1]);
  return children_[2]->forward(h, ctx.children[2]);
}

Tensor ParallelMLP::backward_impl(nn::Context& ctx, const Tensor& dy, nn::GradMode mode) {
  Tensor dh = children_[2]->backward(ctx.children[2], dy, mode);
  dh = children_[1]->backward(ctx.children[1], dh, mode);
  return children_[0]->backward(ctx.children[0], dh, mode);
}

}  // namespace lab08
