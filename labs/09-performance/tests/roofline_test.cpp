// Lab 09, TODO 5: occupancy (5a), the roofline of a step's ops (5b) and the step's figures (5c),
// on the CPU. Occupancy against cases worked out in the handout and against the core's calculator
// on seeded kernels and SMs; the roofline on the handout's worked model and on seeded models and
// peaks, against the rules the handout states; the step's figures on seeded ops.
//
// Tolerances: FLOPs and bytes come from the cost model and are compared exactly; a figure derived
// from them with one division (intensity, an op's bound) to 1e-15 relative (one rounding, 2^-53,
// either way of writing it); a sum over a step's ops to 1e-12 relative (at most a few hundred
// terms, each adding one rounding, in whatever order the rows come). Whether an op is
// compute-bound is checked exactly except within 1e-9 of the ridge, where the rounding of the
// ratio could decide it.
#include <gtest/gtest.h>

#include <algorithm>
#include <climits>
#include <cmath>
#include <map>
#include <string>
#include <vector>

#include "gtl/runtime/occupancy.h"
#include "gtl_judge_output.h"
#include "gtl_test_seed.h"
#include "lab09_cases.h"
#include "performance.h"

namespace {

using gtl::OccupancyLimit;

std::string describe(const gtl::KernelResources& k, const gtl::SmLimits& sm) {
  return std::to_string(k.threads_per_block) + " threads, " +
         std::to_string(k.registers_per_thread) + " registers, " +
         std::to_string(k.shared_bytes_per_block) + " shared bytes on " + sm.arch;
}

void record(gtl::judge::Outputs& out, const gtl::Occupancy& o) {
  out.record(std::to_string(o.by_warps) + " " + std::to_string(o.by_blocks) + " " +
             std::to_string(o.by_registers) + " " + std::to_string(o.by_shared_memory) + " " +
             std::to_string(o.blocks_per_sm) + " " + std::to_string(o.warps_per_sm) + " " +
             std::to_string(o.max_warps_per_sm) + " " +
             std::to_string(static_cast<int>(o.limited_by)));
}

// Every field of `got` against `want`, naming the concept a difference points to.
void expect_occupancy(const gtl::Occupancy& got, const gtl::Occupancy& want,
                      const std::string& who) {
  EXPECT_EQ(got.max_warps_per_sm, want.max_warps_per_sm)
      << who << ": the SM's warp slots are its threads / 32 (TODO 5a)";
  EXPECT_EQ(got.by_warps, want.by_warps)
      << who << ": the warp limit (a block takes whole warps, rounded up; a block above "
      << "max_threads_per_block cannot launch: 0) (TODO 5a)";
  EXPECT_EQ(got.by_blocks, want.by_blocks) << who << ": the block limit (TODO 5a)";
  EXPECT_EQ(got.by_registers, want.by_registers)
      << who << ": the register limit (a warp's registers in whole register_unit units, from one "
      << "sub-partition's share; 0 when a thread or a block asks for more than allowed; INT_MAX "
      << "without registers) (TODO 5a)";
  EXPECT_EQ(got.by_shared_memory, want.by_shared_memory)
      << who << ": the shared-memory limit (the block's bytes plus the reserve, in whole "
      << "shared_unit units; 0 above max_shared_per_block) (TODO 5a)";
  EXPECT_EQ(got.blocks_per_sm, want.blocks_per_sm) << who << ": the smallest limit (TODO 5a)";
  EXPECT_EQ(got.warps_per_sm, want.warps_per_sm)
      << who << ": resident warps = blocks x warps per block (TODO 5a)";
  EXPECT_EQ(got.limited_by, want.limited_by)
      << who << ": the limiting resource is " << gtl::occupancy_limit_name(want.limited_by)
      << ", not " << gtl::occupancy_limit_name(got.limited_by)
      << " (on a tie, the first in OccupancyLimit's order) (TODO 5a)";
}

TEST(Occupancy, WorkedCasesOnSm80AndSm90) {
  gtl::judge::Outputs out("Occupancy.WorkedCasesOnSm80AndSm90");
  for (const lab09_cases::Worked& c : lab09_cases::kWorked)
    for (const bool hopper : {false, true}) {
      const gtl::SmLimits sm = hopper ? gtl::SmLimits::sm_90() : gtl::SmLimits::sm_80();
      const std::string who = std::string(c.what) + ": " + describe(c.kernel, sm);
      gtl::Occupancy want;
      want.max_warps_per_sm = 64;
      want.by_warps = c.by_warps;
      want.by_blocks = 32;
      want.by_registers = c.by_registers;
      want.by_shared_memory = hopper ? c.by_shared_90 : c.by_shared_80;
      want.blocks_per_sm = hopper ? c.blocks_90 : c.blocks_80;
      want.warps_per_sm = want.blocks_per_sm * ((c.kernel.threads_per_block + 31) / 32);
      want.limited_by = hopper ? c.limit_90 : c.limit_80;
      const gtl::Occupancy got = lab09::occupancy(c.kernel, sm);
      record(out, got);
      expect_occupancy(got, want, who);
    }
}

TEST(Occupancy, SeededKernelsOnSm80Sm90AndAMadeUpSm) {
  gtl::judge::Outputs out("Occupancy.SeededKernelsOnSm80Sm90AndAMadeUpSm");
  for (const lab09_cases::SeededSm& c : lab09_cases::seeded_occupancy_cases())
    for (const gtl::KernelResources& k : c.kernels) {
      const gtl::Occupancy got = lab09::occupancy(k, c.sm);
      record(out, got);
      expect_occupancy(got, gtl::theoretical_occupancy(k, c.sm),
                       describe(k, c.sm) + ", " + gtl::test_seed::describe());
      if (::testing::Test::HasFailure()) return;  // one kernel's report is enough
    }
}

TEST(Occupancy, RefusesAnEmptyBlockOrNegativeResources) {
  gtl::judge::Outputs out("Occupancy.RefusesAnEmptyBlockOrNegativeResources");
  int refused = 0;
  for (const gtl::KernelResources k :
       {gtl::KernelResources{0, 32, 0}, gtl::KernelResources{128, -1, 0},
        gtl::KernelResources{128, 32, -4}}) {
    EXPECT_THROW(lab09::occupancy(k, gtl::SmLimits::sm_90()), gtl::Error)
        << describe(k, gtl::SmLimits::sm_90()) << " is not a kernel: occupancy must throw";
    try {
      lab09::occupancy(k, gtl::SmLimits::sm_90());
    } catch (const gtl::Error&) {
      ++refused;
    }
  }
  out.record(refused);
}

// ---- 5b -----------------------------------------------------------------------------------

// The module at `path` (a child's path is its parent's, a dot, and its name).
const gtl::nn::Module* find(const gtl::nn::Module& m, const std::string& path) {
  if (m.path() == path) return &m;
  for (const auto& child : m.children())
    if (path == child->path() || path.rfind(child->path() + ".", 0) == 0) return find(*child, path);
  return nullptr;
}

bool close(double got, double want, double rel) {
  return std::fabs(got - want) <= rel * std::fabs(want);  // false for NaN
}

// Checks `rows` against the rules of the handout's TODO 5b for `c`, and records them sorted by
// path and pass.
void check_rows(const lab09_cases::RooflineCase& c, const std::vector<lab09::OpRoofline>& rows,
                const gtl::nn::Module& model, gtl::judge::Outputs& out, const std::string& who) {
  std::map<std::pair<std::string, std::string>, lab09::OpRoofline> by_key;
  for (const lab09::OpRoofline& r : rows) {
    EXPECT_TRUE(r.pass == "forward" || r.pass == "backward")
        << who << ": row " << r.path << " has pass '" << r.pass << "' (TODO 5b)";
    EXPECT_TRUE(by_key.emplace(std::pair{r.path, r.pass}, r).second)
        << who << ": two rows for " << r.path << " " << r.pass << " (TODO 5b)";
  }
  const auto expected = lab09_cases::costed_modules(c.model.blocks);
  EXPECT_EQ(rows.size(), 2 * expected.size())
      << who << ": expected one row per pass of each of the " << expected.size()
      << " modules with work of their own (TODO 5b)";
  for (const auto& [path, kind] : expected)
    for (const char* pass : {"forward", "backward"}) {
      const auto it = by_key.find(std::pair<std::string, std::string>{path, pass});
      if (it == by_key.end()) {
        ADD_FAILURE() << who << ": no row for " << path << " (" << kind << ") " << pass
                      << (kind == "residual_mlp"
                              ? ": a container's own work (its residual add) is an op too"
                              : "")
                      << " (TODO 5b)";
        continue;
      }
      const lab09::OpRoofline& r = it->second;
      const gtl::nn::Module* m = find(model, path);
      ASSERT_NE(m, nullptr) << path;
      const gtl::nn::ComputeCost cost = std::string(pass) == "forward"
                                            ? m->forward_cost(m->last_input_shape())
                                            : m->backward_cost(m->last_input_shape());
      const std::string op = who + ", " + path + " " + pass;
      EXPECT_EQ(r.kind, kind) << op << ": the module's kind() (TODO 5b)";
      EXPECT_EQ(r.flops, cost.flops)
          << op << ": the cost model's FLOPs at the module's last input "
          << "shape, " << (*pass == 'f' ? "forward" : "backward") << "_cost (TODO 5b)";
      EXPECT_EQ(r.bytes, cost.bytes) << op << ": the cost model's bytes (TODO 5b)";
      EXPECT_TRUE(close(r.intensity, cost.flops / cost.bytes, 1e-15))
          << op << ": arithmetic intensity is FLOPs per byte; expected " << cost.flops / cost.bytes
          << ", got " << r.intensity << " (TODO 5b)";
      const double compute_s = cost.flops / c.peak.flops_per_s;
      const double memory_s = cost.bytes / c.peak.bytes_per_s;
      // The bound is one of the two ceilings' times, and no shorter than either.
      EXPECT_TRUE((close(r.bound_s, compute_s, 1e-15) || close(r.bound_s, memory_s, 1e-15)) &&
                  r.bound_s >= compute_s * (1 - 1e-15) && r.bound_s >= memory_s * (1 - 1e-15))
          << op << ": the least time at the peak: the op needs " << compute_s
          << " s of compute and " << memory_s << " s of memory traffic at these peaks, bound_s "
          << "is " << r.bound_s << " (TODO 5b, the roofline)";
      const double ridge = c.peak.flops_per_s / c.peak.bytes_per_s;
      if (!close(cost.flops / cost.bytes, ridge, 1e-9)) {
        EXPECT_EQ(r.compute_bound, compute_s > memory_s)
            << op << ": intensity " << cost.flops / cost.bytes << " FLOP/byte against a ridge "
            << "point of " << ridge << " FLOP/byte (TODO 5b)";
      }
    }
  for (const auto& [key, r] : by_key) {
    out.record(key.first + " " + key.second);
    out.record(r.flops), out.record(r.bytes), out.record(r.intensity),
        out.record(r.compute_bound ? 1 : 0), out.record(r.bound_s);
  }
}

TEST(Roofline, WorkedMlpAtTheMeasuredH200Peaks) {
  gtl::judge::Outputs out("Roofline.WorkedMlpAtTheMeasuredH200Peaks");
  const lab09_cases::RooflineCase c = lab09_cases::worked_roofline_case();
  const auto model = lab09_cases::forward_once(c.model);
  const std::vector<lab09::OpRoofline> rows = lab09::step_roofline(*model, c.peak);
  check_rows(c, rows, *model, out, "the worked mlp");
  // The handout's worked row: fc1 of the residual block, forward, [4, 8] x [8, 32]: 2048 FLOPs
  // and (32 + 256 + 128) x 4 + 128 bias bytes = 1792 bytes, far below the ridge (13.1).
  for (const lab09::OpRoofline& r : rows)
    if (r.path == "2.fc1" && r.pass == "forward") {
      EXPECT_EQ(r.flops, 2048.0) << "2.fc1 forward: the handout's worked row (TODO 5b)";
      EXPECT_EQ(r.bytes, 1792.0) << "2.fc1 forward: the handout's worked row (TODO 5b)";
      EXPECT_FALSE(r.compute_bound) << "2.fc1 forward: 1.14 FLOP/byte is memory-bound (TODO 5b)";
    }
}

TEST(Roofline, SeededModelsAndPeaks) {
  gtl::judge::Outputs out("Roofline.SeededModelsAndPeaks");
  for (const lab09_cases::RooflineCase& c : lab09_cases::seeded_roofline_cases()) {
    const auto model = lab09_cases::forward_once(c.model);
    check_rows(c, lab09::step_roofline(*model, c.peak), *model, out,
               "mlp of " + std::to_string(c.model.blocks) + " blocks, hidden " +
                   std::to_string(c.model.hidden) + ", batch " + std::to_string(c.model.batch) +
                   ", " + gtl::test_seed::describe());
  }
}

// ---- 5c -----------------------------------------------------------------------------------

TEST(StepFigures, SeededOps) {
  // The judge recomputes the four figures; here, what holds whatever they are. Cases 1 and 2 run
  // some forwards again (activation checkpointing).
  gtl::judge::Outputs out("StepFigures.SeededOps");
  for (const lab09_cases::FiguresCase& c : lab09_cases::seeded_figures_cases()) {
    const lab09::StepFigures f = lab09::step_figures(c.ops, c.measured_s, c.peak);
    out.record(f.flops), out.record(f.bound_s), out.record(f.mfu), out.record(f.fraction_of_bound);
    const std::string who = std::to_string(c.ops.size()) + " ops, " + gtl::test_seed::describe();
    EXPECT_TRUE(f.flops > 0 && f.bound_s > 0 && f.bound_s <= c.measured_s)
        << who << ": FLOPs " << f.flops << " and a bound of " << f.bound_s
        << " s, for a step measured at " << c.measured_s
        << " s: both must be positive, and no step beats its roofline (TODO 5c)";
    EXPECT_TRUE(close(f.mfu * c.measured_s * c.peak.flops_per_s, f.flops, 1e-12))
        << who << ": MFU is the step's FLOPs per second over the peak FLOP/s; got " << f.mfu
        << " for " << f.flops << " FLOPs (TODO 5c)";
    EXPECT_TRUE(close(f.fraction_of_bound * c.measured_s, f.bound_s, 1e-12))
        << who << ": fraction_of_bound is bound_s over the measured time; got "
        << f.fraction_of_bound << " (TODO 5c)";
  }
}

}  // namespace
