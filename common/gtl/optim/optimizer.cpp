// Optimizer::load_state: restores the named state tensors of a checkpoint (see optimizer.h).
#include "gtl/optim/optimizer.h"

#include <map>

namespace gtl::optim {

void Optimizer::load_state(const NamedTensors& saved) {
  std::map<std::string, const Tensor*> by_name;
  for (const auto& [name, t] : saved) by_name[name] = &t;
  const NamedTensors mine = state();
  GTL_CHECK(saved.size() == mine.size(),
            "load_state: expected " << mine.size() << " state tensors, got " << saved.size());
  for (const auto& [name, t] : mine) {
    auto it = by_name.find(name);
    GTL_CHECK(it != by_name.end(), "load_state: the saved state has no tensor '" << name << "'");
    const Tensor& src = *it->second;
    GTL_CHECK(src.shape() == t.shape() && src.dtype() == t.dtype(),
              "load_state: '" << name << "' expected " << t.str(0) << ", got " << src.str(0));
    Tensor(t).copy_(src);
  }
}

}  // namespace gtl::optim
