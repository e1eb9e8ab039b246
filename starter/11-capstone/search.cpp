// Lab 11, TODO 3: the fastest configuration that fits.
//
// The space is small enough to try every point (a few thousand configurations for a 512-GPU
// cluster), so the search is exhaustive: what needs care is the space itself (which tuples are
// runnable at all, and the global batch each must keep) and a choice that is the same on every
// machine when two candidates are equally fast.
#include "capstone.h"
#include "gtl/runtime/error.h"

namespace lab11 {

Plan search(const ModelSpec& model, const ClusterSpec& cluster, const SearchRequest& request,
            const MemoryFn& memory, const SpeedFn& speed) {
  GTL_CHECK(request.global_batch_tokens >= 1 && request.max_micro_batch >= 1,
            "search: a global batch of " << request.global_batch_tokens
                                         << " tokens, micro-batches up to "
                                         << request.max_micro_batch << " (both >= 1)");
  Plan plan;
  // TODO(lab11) step 3: every candidate of the space, priced, and the best that fits.
  //   Spec: capstone.h, search (the space's rules and order, the choice and its ties).
  //   Hint: one loop per field of Config, in the order of the spec; the global batch decides
  //   the accumulation, and may leave no integer one. About 45 lines.
  (void)model;
  (void)cluster;
  (void)memory;
  (void)speed;
  // END TODO(lab11)
  return plan;
}

Plan search(const ModelSpec& model, const ClusterSpec& cluster, const SearchRequest& request) {
  return search(
      model, cluster, request, [&](const Config& c) { return memory_per_gpu(model, c).total(); },
      [&](const Config& c) {
        return step_time(model, cluster, c, request.achieved_mfu).tokens_per_s;
      });
}

}  // namespace lab11
