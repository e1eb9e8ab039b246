// Module: a layer with an explicit forward and backward pass (the tiny-cuda-nn interface).
//
//   nn::Context ctx;
//   Tensor y  = layer.forward(x, ctx);                  // ctx keeps what backward needs
//   Tensor dx = layer.backward(ctx, dy, GradMode::Overwrite);   // consumes ctx, writes grads
//
// Why a Context instead of tensors cached inside the layer: the activations a training step holds
// between forward and backward are then a visible object. Its size is the activation memory
// (allocator statistics show it), dropping it and recomputing it later is activation
// checkpointing (checkpointed.h), and one layer can run forward twice (micro-batches) without the
// second call overwriting the first one's activations. Each layer saves EXACTLY what its backward
// reads, no more: a Linear its input, a ReLU its input, a max-pool only the winners' indices.
//
// GradMode makes gradient accumulation over micro-batches a flag: Overwrite writes dL/dW into the
// gradient tensors (no zero_grad needed), Accumulate adds to them.
//
// Hooks (set on a whole model with set_hooks) are the places the later labs plug into:
//   before_forward / after_forward / before_backward(Module&)   FSDP gathers and frees weights here
//   grad_ready(ParamRef&)   fired once per parameter as soon as its gradient is final, in reverse
//                           order of parameters(): backward visits layers last to first, so the
//                           last layer's gradients are ready first. DDP starts all-reducing them
//                           while the earlier layers are still computing theirs.
//
// forward()/backward() are non-virtual doors: they fire the hooks and call the layer's
// forward_impl()/backward_impl(). Parameters are optim::ParamRef (value, grad, optional half
// compute copy, name), named by their path in the model ("2.fc1.weight").
#pragma once

#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "gtl/optim/param.h"
#include "gtl/tensor/tensor.h"

namespace gtl::nn {

using optim::ParamRef;

enum class GradMode { Overwrite, Accumulate };

// What a layer keeps from forward for backward. Shapes and dtypes cost no activation memory.
struct Context {
  std::vector<Tensor> saved;      // exactly the tensors backward reads
  std::vector<Context> children;  // one per child module (containers)
  Shape input_shape;
  DType input_dtype = DType::Float32;

  // Bytes of the saved tensors, this context and its children (views of one tensor count once
  // per view: an upper bound; allocator statistics give the exact figure).
  int64_t saved_bytes() const;
  void clear() { *this = Context(); }
};

class Module;

struct Hooks {
  std::function<void(Module&)> before_forward;
  std::function<void(Module&)> after_forward;
  std::function<void(Module&)> before_backward;
  std::function<void(const ParamRef&)> grad_ready;
};

class Module {
 public:
  explicit Module(std::string kind) : kind_(std::move(kind)) {}
  virtual ~Module() = default;
  Module(const Module&) = delete;
  Module& operator=(const Module&) = delete;

  // y = layer(x); fills ctx with what backward needs (ctx is cleared first).
  Tensor forward(const Tensor& x, Context& ctx);
  // dx from dy = dL/dy; writes (or adds to) this layer's parameter gradients and fires
  // grad_ready for each of them. Leaves ctx empty: the activations are released here.
  Tensor backward(Context& ctx, const Tensor& dy, GradMode mode = GradMode::Overwrite);

  // "linear", "relu", ...; and the layer's path in its model ("" for the root, "2", "2.fc1").
  const std::string& kind() const { return kind_; }
  const std::string& path() const { return path_; }

  // All parameters of this module and its children, in registration order (handles: they share
  // data with the layer). The list optimizers, clipping and checkpoints take.
  std::vector<ParamRef> parameters() const;
  // The layer's own ParamRef objects, for re-pointing them into a flat buffer (parameter_buffer.h).
  std::vector<ParamRef*> parameter_slots();
  int64_t num_parameters() const;  // elements

  const std::vector<std::unique_ptr<Module>>& children() const { return children_; }
  // Installs `hooks` on this module and every module below it.
  void set_hooks(std::shared_ptr<const Hooks> hooks);
  const Hooks* hooks() const { return hooks_.get(); }

 protected:
  virtual Tensor forward_impl(const Tensor& x, Context& ctx) = 0;
  virtual Tensor backward_impl(Context& ctx, const Tensor& dy, GradMode mode) = 0;

  // Registers a float32 parameter (on the CPU; parameter_buffer.h moves it) with a zero gradient.
  ParamRef& add_parameter(const std::string& name, Tensor init);
  // Adopts a child module named `name` in paths ("fc1", "0", ...).
  Module& add_child(const std::string& name, std::unique_ptr<Module> child);
  // Writes g (any floating dtype) into p.grad, or adds it, and fires grad_ready after the layer.
  static void write_grad(const ParamRef& p, const Tensor& g, GradMode mode);

  std::vector<ParamRef> params_;
  std::vector<std::unique_ptr<Module>> children_;

 private:
  void set_path(const std::string& path);

  std::vector<std::string> local_names_;  // parameter names without the path
  std::vector<std::string> child_names_;

  std::string kind_;
  std::string path_;
  std::shared_ptr<const Hooks> hooks_;
};

}  // namespace gtl::nn
