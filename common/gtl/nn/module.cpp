// Module: the hook-firing doors around each layer's forward and backward (see module.h).
#include "gtl/nn/module.h"

#include <algorithm>
#include <atomic>

#include "gtl/ops/elementwise.h"
#include "gtl/optim/master_weights.h"

namespace gtl::nn {

int64_t Context::saved_bytes() const {
  int64_t bytes = 0;
  for (const Tensor& t : saved) {
    if (t.defined()) bytes += static_cast<int64_t>(t.nbytes());
  }
  for (const Context& c : children) bytes += c.saved_bytes();
  return bytes;
}

template <typename F>
void Module::fire(F&& call) const {
  if (hooks_.empty()) return;
  // A copy of the list: a callback may add or remove sets (module.h), which must not disturb
  // this loop; the shared_ptrs also keep a set alive while its own callback removes it.
  const std::vector<std::shared_ptr<detail::HookEntry>> sets = hooks_;
  for (const auto& set : sets) {
    if (!set->removed) call(set->hooks);
  }
}

Tensor Module::forward(const Tensor& x, Context& ctx) {
  GTL_CHECK(x.defined(), kind_ << " '" << path_ << "' forward: the input tensor is undefined");
  ctx.clear();
  ctx.input_shape = x.shape();
  ctx.input_dtype = x.dtype();
  last_input_shape_ = x.shape();
  fire([&](const Hooks& h) {
    if (h.before_forward) h.before_forward(*this);
  });
  Tensor y = forward_impl(x, ctx);
  fire([&](const Hooks& h) {
    if (h.after_forward) h.after_forward(*this);
  });
  return y;
}

Tensor Module::backward(Context& ctx, const Tensor& dy, GradMode mode) {
  GTL_CHECK(dy.defined(), kind_ << " '" << path_ << "' backward: dy is undefined");
  GTL_CHECK(!ctx.input_shape.empty(),
            kind_ << " '" << path_
                  << "' backward: the context is empty; run forward with it first (a context is "
                     "consumed by backward and cannot be used twice)");
  fire([&](const Hooks& h) {
    if (h.before_backward) h.before_backward(*this);
  });
  Tensor dx = backward_impl(ctx, dy, mode);
  // Own parameters are final now; children fired theirs inside backward_impl. Reverse order, so
  // the model as a whole fires in exactly the reverse of parameters().
  for (auto it = params_.rbegin(); it != params_.rend(); ++it) {
    fire([&](const Hooks& h) {
      if (h.grad_ready) h.grad_ready(*it);
    });
  }
  ctx.clear();
  fire([&](const Hooks& h) {
    if (h.after_backward) h.after_backward(*this);
  });
  return dx;
}

ComputeCost Module::forward_cost(const Shape&) const {
  return {};
}

ComputeCost Module::backward_cost(const Shape& input_shape) const {
  const ComputeCost f = forward_cost(input_shape);
  return {2 * f.flops, 2 * f.bytes};
}

std::vector<ParamRef> Module::parameters() const {
  std::vector<ParamRef> out(params_.begin(), params_.end());
  for (const auto& child : children_) {
    std::vector<ParamRef> sub = child->parameters();
    out.insert(out.end(), sub.begin(), sub.end());
  }
  return out;
}

std::vector<ParamRef*> Module::parameter_slots() {
  std::vector<ParamRef*> out;
  for (ParamRef& p : params_) out.push_back(&p);
  for (const auto& child : children_) {
    std::vector<ParamRef*> sub = child->parameter_slots();
    out.insert(out.end(), sub.begin(), sub.end());
  }
  return out;
}

int64_t Module::num_parameters() const {
  int64_t n = 0;
  for (const ParamRef& p : parameters()) n += p.value.numel();
  return n;
}

HookHandle Module::add_hooks(Hooks hooks) {
  static std::atomic<uint64_t> next_order{0};
  auto entry = std::make_shared<detail::HookEntry>();
  entry->order = next_order.fetch_add(1);
  entry->hooks = std::move(hooks);
  install(entry);
  return HookHandle(entry);
}

void Module::install(const std::shared_ptr<detail::HookEntry>& entry) {
  prune_hooks();
  if (std::find(hooks_.begin(), hooks_.end(), entry) == hooks_.end()) {
    // Sorted by registration order: a child added later may already carry newer sets of its own.
    auto at = std::upper_bound(hooks_.begin(), hooks_.end(), entry,
                               [](const auto& a, const auto& b) { return a->order < b->order; });
    hooks_.insert(at, entry);
  }
  for (const auto& child : children_) child->install(entry);
}

void Module::prune_hooks() {
  std::erase_if(hooks_, [](const auto& e) { return e->removed; });
}

int64_t Module::num_hook_sets() const {
  return static_cast<int64_t>(
      std::count_if(hooks_.begin(), hooks_.end(), [](const auto& e) { return !e->removed; }));
}

ParamRef& Module::add_parameter(const std::string& name, Tensor init) {
  GTL_CHECK(init.dtype() == DType::Float32,
            kind_ << ": parameters are float32 masters, got " << dtype_name(init.dtype()));
  local_names_.push_back(name);
  params_.push_back(ParamRef{init, Tensor::zeros(init.shape(), DType::Float32, init.device()),
                             Tensor(), path_.empty() ? name : path_ + "." + name});
  return params_.back();
}

Module& Module::add_child(const std::string& name, std::unique_ptr<Module> child) {
  GTL_CHECK(child != nullptr, kind_ << ": add_child('" << name << "') got a null module");
  child_names_.push_back(name);
  children_.push_back(std::move(child));
  children_.back()->set_path(path_.empty() ? name : path_ + "." + name);
  prune_hooks();
  for (const auto& entry : hooks_) children_.back()->install(entry);
  return *children_.back();
}

void Module::set_path(const std::string& path) {
  path_ = path;
  for (std::size_t i = 0; i < params_.size(); ++i) {
    params_[i].name = path_.empty() ? local_names_[i] : path_ + "." + local_names_[i];
  }
  for (std::size_t i = 0; i < children_.size(); ++i) {
    children_[i]->set_path(path_.empty() ? child_names_[i] : path_ + "." + child_names_[i]);
  }
}

void Module::write_grad(const ParamRef& p, const Tensor& g, GradMode mode) {
  GTL_CHECK(g.shape() == p.grad.shape(), "write_grad: the gradient of '"
                                             << p.name << "' should have shape "
                                             << shape_str(p.grad.shape()) << ", got "
                                             << shape_str(g.shape()));
  if (mode == GradMode::Overwrite) {
    optim::detail::convert_into(g, p.grad);  // widening copy for half gradients; no sync
  } else {
    ops::add_(p.grad, g.dtype() == p.grad.dtype() ? g : g.to(p.grad.dtype()));
  }
}

}  // namespace gtl::nn
