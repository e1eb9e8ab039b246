#include "gtl/data/dataset.h"

namespace gtl::data {

Sample Dataset::get(int64_t index) const {
  Sample s;
  s.image.resize(static_cast<std::size_t>(sample_numel()));
  s.label = get_into(index, s.image.data());
  return s;
}

void Dataset::gather(const std::vector<int64_t>& indices, float* images, int64_t* labels) const {
  const int64_t numel = sample_numel();
  for (std::size_t i = 0; i < indices.size(); ++i) {
    labels[i] = get_into(indices[i], images + static_cast<int64_t>(i) * numel);
  }
}

void Dataset::check_index(const char* what, int64_t index) const {
  GTL_CHECK(index >= 0 && index < size(),
            what << ": sample index " << index << " out of range [0, " << size() << ")");
}

}  // namespace gtl::data
