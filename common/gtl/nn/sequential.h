// Sequential: layers run one after the other; backward runs them in reverse.
//
// Its Context holds one child context per layer, so the activations of the whole stack are one
// tree (Context::saved_bytes() sums it). Backward walks the layers last to first, which is why
// gradients become ready in reverse order (module.h): layer i's gradients are final as soon as
// its own backward returns, before layers 0..i-1 have started theirs.
#pragma once

#include <memory>
#include <string>

#include "gtl/nn/module.h"

namespace gtl::nn {

class Sequential : public Module {
 public:
  Sequential() : Module("sequential") {}

  // Appends a layer, named by its index in paths ("0", "1", ...); returns it.
  template <typename M>
  M& add(std::unique_ptr<M> layer) {
    return add(std::move(layer), std::to_string(children_.size()));
  }
  // Appends a layer under a given name: a pipeline stage names its layers by their index in the
  // whole model (models.h), so "5.fc1.weight" is the same parameter in both.
  template <typename M>
  M& add(std::unique_ptr<M> layer, const std::string& name) {
    M& ref = *layer;
    add_child(name, std::move(layer));
    return ref;
  }
  Module& operator[](std::size_t i) const { return *children_.at(i); }
  std::size_t size() const { return children_.size(); }

 protected:
  Tensor forward_impl(const Tensor& x, Context& ctx) override;
  Tensor backward_impl(Context& ctx, const Tensor& dy, GradMode mode) override;
};

}  // namespace gtl::nn
