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
  // SOLUTION(lab09) step 5a
  constexpr int kWarp = 32;
  const auto round_up = [](int64_t x, int64_t unit) { return (x + unit - 1) / unit * unit; };
  const int warps = (kernel.threads_per_block + kWarp - 1) / kWarp;
  o.max_warps_per_sm = sm.max_threads_per_sm / kWarp;
  o.by_warps =
      kernel.threads_per_block <= sm.max_threads_per_block ? o.max_warps_per_sm / warps : 0;
  o.by_blocks = sm.max_blocks_per_sm;

  const int64_t per_warp = round_up(int64_t{kernel.registers_per_thread} * kWarp, sm.register_unit);
  if (kernel.registers_per_thread > sm.max_registers_per_thread ||
      per_warp * round_up(warps, sm.sub_partitions) > sm.max_registers_per_block)
    o.by_registers = 0;
  else if (per_warp == 0)
    o.by_registers = INT_MAX;
  else
    o.by_registers = static_cast<int>(sm.registers_per_sm / sm.sub_partitions / per_warp *
                                      sm.sub_partitions / warps);

  const int64_t shared =
      round_up(kernel.shared_bytes_per_block + sm.reserved_shared_per_block, sm.shared_unit);
  o.by_shared_memory = kernel.shared_bytes_per_block > sm.max_shared_per_block
                           ? 0
                           : static_cast<int>(sm.shared_per_sm / shared);

  o.blocks_per_sm = o.by_warps;
  o.limited_by = gtl::OccupancyLimit::Warps;
  const std::pair<gtl::OccupancyLimit, int> others[] = {
      {gtl::OccupancyLimit::Blocks, o.by_blocks},
      {gtl::OccupancyLimit::Registers, o.by_registers},
      {gtl::OccupancyLimit::SharedMemory, o.by_shared_memory}};
  for (const auto& [limit, blocks] : others)
    if (blocks < o.blocks_per_sm) o.blocks_per_sm = blocks, o.limited_by = limit;
  o.warps_per_sm = o.blocks_per_sm * warps;
  // END SOLUTION(lab09)
  return o;
}

std::vector<OpRoofline> step_roofline(const gtl::nn::Module& model, const Peak& peak) {
  GTL_CHECK(peak.flops_per_s > 0 && peak.bytes_per_s > 0,
            "step_roofline: peaks of " << peak.flops_per_s << " FLOP/s and " << peak.bytes_per_s
                                       << " bytes/s (both must be positive)");
  std::vector<OpRoofline> ops;
  // SOLUTION(lab09) step 5b
  const double ridge = peak.flops_per_s / peak.bytes_per_s;
  std::function<void(const gtl::nn::Module&)> visit = [&](const gtl::nn::Module& m) {
    for (const bool forward : {true, false}) {
      const gtl::nn::ComputeCost c =
          forward ? m.forward_cost(m.last_input_shape()) : m.backward_cost(m.last_input_shape());
      if (c.flops == 0 && c.bytes == 0) continue;
      OpRoofline op{m.path(), m.kind(), forward ? "forward" : "backward", c.flops, c.bytes};
      op.intensity = c.bytes > 0 ? c.flops / c.bytes : std::numeric_limits<double>::infinity();
      op.compute_bound = op.intensity >= ridge;
      op.bound_s = std::max(c.flops / peak.flops_per_s, c.bytes / peak.bytes_per_s);
      ops.push_back(op);
    }
    for (const auto& child : m.children()) visit(*child);
  };
  visit(model);
  // END SOLUTION(lab09)
  return ops;
}

StepFigures step_figures(const std::vector<OpRoofline>& ops, double measured_s, const Peak& peak) {
  GTL_CHECK(measured_s > 0 && peak.flops_per_s > 0,
            "step_figures: a step of " << measured_s << " s at a peak of " << peak.flops_per_s
                                       << " FLOP/s (both must be positive)");
  StepFigures f;
  // SOLUTION(lab09) step 5c
  for (const OpRoofline& op : ops) {
    // MFU counts the model's FLOPs: a forward run again for checkpointing is the GPU's extra
    // work, not the model's. It still takes time: the bound counts every op, each held by its own
    // ceiling, since kernels on one stream run one after another.
    if (!op.recomputed) f.flops += op.flops;
    f.bound_s += op.bound_s;
  }
  f.mfu = f.flops / (measured_s * peak.flops_per_s);
  f.fraction_of_bound = f.bound_s / measured_s;
  // END SOLUTION(lab09)
  return f;
}

}  // namespace lab09
