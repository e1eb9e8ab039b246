// Module: a layer with an explicit forward and backward pass (the tiny-cuda-nn interface).
//
//   nn::Context ctx;
//   Tensor y  = layer.forward(x, ctx);                  // ctx keeps what backward needs
//   Tensor dx = layer.backward(ctx, dy, GradMode::Overwrite);   // consumes ctx, writes grads
//
// Why a Context instead of tensors cached inside the layer: the activations a training step holds
// between forward and backward are then a visible object. Its size is the activation memory
// (allocator statistics show it), dropping it and recomputing it later is activation
// checkpointing (activation_checkpoint.h), and one layer can run forward twice (micro-batches)
// without the second call overwriting the first one's activations. Each layer saves EXACTLY what
// its backward reads, no more: a Linear its input, a ReLU its input, a max-pool only the winners'
// indices.
//
// GradMode makes gradient accumulation over micro-batches a flag: Overwrite writes dL/dW into the
// gradient tensors (no zero_grad needed), Accumulate adds to them.
//
// Hooks are the places the later labs plug into. add_hooks(set) installs a set on a module, every
// module below it and every child added later, and returns a HookHandle that removes exactly that
// set again (when destroyed, or by remove()). Sets compose: a test's observer, a DDP set and a
// trace can sit on one model at once, and at every event they fire in registration order.
// clang-format off
//   before_forward(m)   before m's own forward (m.last_input_shape() is already set)
//   after_forward(m)    after it; children's forward events nest inside m's bracket
//   before_backward(m)  before m's backward                       FSDP gathers a unit's weights
//   grad_ready(p)       once per parameter, as soon as its gradient is final, in the reverse of
//                       parameters(): backward visits layers last to first, so the last layer's
//                       gradients are ready first. DDP starts all-reducing them while the
//                       earlier layers are still computing theirs.
//   after_backward(m)   after m's backward has finished: after the grad_ready of all its
//                       parameters, its children's included, and after its context was freed.
//                       FSDP reduce-scatters a unit's gradients and frees its weights here.
// clang-format on
// ActivationCheckpoint (activation_checkpoint.h) recomputes its segment's forward inside its own
// backward: there a hook sees before_backward(checkpointed), then a complete second forward of the
// segment (before/after_forward of every module in it, with in_recomputation() true), then the
// segment's backward events, then after_backward(checkpointed).
//
// Removing a set from inside one of its own callbacks (or another set's) is allowed: the running
// callback finishes, and no later event fires that set, not even on the remaining modules or
// parameters of the current event. A set added from inside a callback fires from the next event.
// Like the model itself, its hooks and handles belong to one thread at a time (each in-process
// rank has its own model).
//
// forward()/backward() are non-virtual doors: they fire the hooks and call the layer's
// forward_impl()/backward_impl(). Parameters are optim::ParamRef (value, grad, optional half
// compute copy, name), named by their path in the model ("2.fc1.weight").
//
// Costs for a simulated timeline: forward_cost(input shape) and backward_cost(input shape) give
// the FLOPs and bytes of a module's OWN work (a container's children report theirs), so the cost
// of a step is the sum over modules, and a hook can price each module as it runs with
// m.forward_cost(m.last_input_shape()).
#pragma once

#include <cstdint>
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

// One set of callbacks (any may be empty); see the header comment for when each fires.
struct Hooks {
  std::function<void(Module&)> before_forward;
  std::function<void(Module&)> after_forward;
  std::function<void(Module&)> before_backward;
  std::function<void(const ParamRef&)> grad_ready;
  std::function<void(Module&)> after_backward;
};

namespace detail {
// An installed set, shared by every module it sits on and by its handle. `removed` turns it off
// everywhere at once; the modules drop the entry lazily (the next add_hooks or add_child).
struct HookEntry {
  uint64_t order = 0;  // global registration number: sets fire in increasing order
  Hooks hooks;
  bool removed = false;
};
}  // namespace detail

// Owns one installed hook set: removes it on destruction or remove(). Movable, not copyable.
// Safe to outlive the model (it only flags the shared entry).
class HookHandle {
 public:
  HookHandle() = default;
  explicit HookHandle(std::shared_ptr<detail::HookEntry> entry) : entry_(std::move(entry)) {}
  ~HookHandle() { remove(); }
  HookHandle(HookHandle&& other) noexcept = default;
  HookHandle& operator=(HookHandle&& other) noexcept {
    if (this != &other) {
      remove();
      entry_ = std::move(other.entry_);
    }
    return *this;
  }
  HookHandle(const HookHandle&) = delete;
  HookHandle& operator=(const HookHandle&) = delete;

  // Turns the set off on every module it was installed on; idempotent.
  void remove() {
    if (entry_) entry_->removed = true;
    entry_.reset();
  }
  bool active() const { return entry_ != nullptr && !entry_->removed; }

 private:
  std::shared_ptr<detail::HookEntry> entry_;
};

// What one pass of a module costs, for a cost model that turns it into time.
struct ComputeCost {
  double flops = 0;  // floating-point operations (a multiply-add counts 2)
  double bytes = 0;  // bytes read and written from memory by the module's kernels
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
  bool is_leaf() const { return children_.empty(); }

  // Installs `hooks` on this module, every module below it and children added later; the set
  // stays until the returned handle is destroyed or removed. Discarding the handle removes the
  // set at once, hence [[nodiscard]].
  [[nodiscard]] HookHandle add_hooks(Hooks hooks);
  // Hook sets active on this module (tests and tools).
  int64_t num_hook_sets() const;

  // The shape of the input of the latest forward() (empty before the first): what a hook passes
  // to forward_cost / backward_cost.
  const Shape& last_input_shape() const { return last_input_shape_; }
  // FLOPs and bytes of this module's OWN work for an input of `input_shape` (children excluded),
  // under the current precision policy (it sets the bytes per element of half-precision GEMMs).
  // Default: zero (containers: their children report their own work).
  virtual ComputeCost forward_cost(const Shape& input_shape) const;
  // Default: twice the forward's flops and bytes (gradients with respect to the input and to the
  // weights each cost about one forward); layers whose truth differs override it.
  virtual ComputeCost backward_cost(const Shape& input_shape) const;

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
  void install(const std::shared_ptr<detail::HookEntry>& entry);  // on this subtree
  void prune_hooks();
  // Calls `call(hooks)` for each live set in registration order (sets removed meanwhile skipped).
  template <typename F>
  void fire(F&& call) const;

  std::vector<std::string> local_names_;  // parameter names without the path
  std::vector<std::string> child_names_;

  std::string kind_;
  std::string path_;
  Shape last_input_shape_;
  std::vector<std::shared_ptr<detail::HookEntry>> hooks_;  // sorted by order
};

}  // namespace gtl::nn
