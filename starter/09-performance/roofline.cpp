// Lab 09, TODO 5: accounting for a step's time. How many blocks of a kernel an SM holds (5a), where
// every op of a training step sits under a GPU's roofline (5b), and what the whole step achieved
// against its peak (5c).
//
// A GPU runs an op no faster than its compute ceiling (peak FLOP/s) allows and no faster than its
// memory ceiling (peak bytes/s) allows: the roofline is the smaller of the two rates at the op's
// arithmetic intensity. Occupancy is one reason a kernel stays below it: too few resident warps
// to hide memory latency.
#include <algorithm>
#include <climits>
#include <cstdint>
#include <functional>
#include <limits>

#include "gtl/runtime/error.h"
#include "performance.h"

namespace lab09 {

gtl::Occupancy occupancy(const gtl::KernelResources& kernel, const gtl::SmLimits& sm) {
  GTL_CHECK(kernel.threads_per_block > 0,
            "occupancy: a block of " << kernel.threads_per_block << " threads (at least 1)");
  GTL_CHECK(kernel.registers_per_thread >= 0 && kernel.shared_bytes_per_block >= 0,
            "occupancy: negative registers (" << kernel.registers_per_thread
                                              << ") or shared bytes ("
                                              << kernel.shared_bytes_per_block << ")");
  gtl::Occupancy o;
  // TODO(lab09) step 5a: fill every field of o for `kernel` on an SM with `sm`'s limits: the
  // blocks each of the four resources allows (warp slots, the block limit, registers, shared
  // memory), the smallest of them, the warps those blocks make, the SM's warp slots and the
  // resource that sets the count (on a tie, the first in OccupancyLimit's order). A block that
  // cannot launch at all (too many threads, too many registers per thread or per block, more
  // shared memory than a block may ask for) makes its resource's limit 0; a kernel that uses no
  // registers has no register limit (INT_MAX). Read every figure from `sm`, never a constant: the
  // tests use made-up SMs too. Hint: threads, registers and shared memory are all handed out in
  // whole units (warps, register_unit, shared_unit), and a warp's registers come from one
  // sub-partition's share of the file (the handout's TODO 5a table gives answers to check
  // against). About 30 lines.
  (void)kernel, (void)sm;
  throw gtl::Error("TODO(lab09) step 5a: occupancy is not implemented");
  // END TODO(lab09)
  return o;
}

std::vector<OpRoofline> step_roofline(const gtl::nn::Module& model, const Peak& peak) {
  GTL_CHECK(peak.flops_per_s > 0 && peak.bytes_per_s > 0,
            "step_roofline: peaks of " << peak.flops_per_s << " FLOP/s and " << peak.bytes_per_s
                                       << " bytes/s (both must be positive)");
  std::vector<OpRoofline> ops;
  // TODO(lab09) step 5b: one OpRoofline per module of `model` (the model itself and everything
  // below it) and pass whose own cost (forward_cost / backward_cost at the module's
  // last_input_shape()) is not zero: its path, kind, pass ("forward" or "backward"), FLOPs,
  // bytes, arithmetic intensity, whether it is compute-bound at `peak` (at or above the ridge
  // point) and the least time it can take at `peak`. Hint: a container can have work of its own
  // besides its children's (the handout's TODO 5b says which). About 20 lines.
  (void)model, (void)peak;
  throw gtl::Error("TODO(lab09) step 5b: step_roofline is not implemented");
  // END TODO(lab09)
  return ops;
}

StepFigures step_figures(const std::vector<OpRoofline>& ops, double measured_s, const Peak& peak) {
  GTL_CHECK(measured_s > 0 && peak.flops_per_s > 0,
            "step_figures: a step of " << measured_s << " s at a peak of " << peak.flops_per_s
                                       << " FLOP/s (both must be positive)");
  StepFigures f;
  // TODO(lab09) step 5c: the step's FLOPs as MFU counts them, the least time the step's ops can
  // take at `peak`, its MFU and the fraction of the measured time that bound is. Two decisions
  // (the handout's TODO 5c): which ops' FLOPs and which ops' time count, and how the ops of one
  // stream share the GPU. About 8 lines.
  (void)ops, (void)measured_s, (void)peak;
  throw gtl::Error("TODO(lab09) step 5c: step_figures is not implemented");
  // END TODO(lab09)
  return f;
}

}  // namespace lab09
