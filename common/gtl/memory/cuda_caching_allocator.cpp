// Placeholder: the caching allocator is being written (issue 2).
#include "gtl/memory/allocator.h"
namespace gtl {
std::shared_ptr<Allocator> make_cuda_caching_allocator(int device_index) {
  throw Error("cuda:" + std::to_string(device_index) + " allocator not written yet");
}
}  // namespace gtl
