// TODO 6: where TP belongs. The traced step of the TP MLP block (lab08_placement_cases.h) on
// k = 1, 2, 4, 8 ranks whose work differs, simulated by your tp_step_figures with the group inside
// one node and one rank per node, against the core's simulator (gtl/distributed/timeline.h) on
// the same traces: the same model, so the figures agree to the rounding of two summation orders
// (handout, TODO 6). Then the largest TP size under the study's bar for each placement. Your
// functions run inside TODO 6's guard scope (lab08_student_call.h), where the core's
// simulate_timeline refuses to run; the simulator's figures they are compared with are computed
// before, outside it. Set LAB08_FIGURES_DIR to write the handout's Chrome traces (open them at
// https://ui.perfetto.dev) and their pictures.
#include <gtest/gtest.h>

#include <cctype>
#include <cmath>
#include <cstdlib>
#include <iostream>
#include <map>
#include <set>
#include <string>

#include "gtl/distributed/timeline_svg.h"
#include "gtl_judge_output.h"
#include "lab08_placement_cases.h"
#include "lab08_student_call.h"
#include "lab08_test_util.h"
#include "tensor_parallel.h"

namespace {

using namespace lab08;
using lab08::testing::show;
namespace pc = lab08_placement;

const char* placement_name(TpPlacement p) {
  return p == TpPlacement::IntraNode ? "inside one node (NVLink)"
                                     : "one rank per node (InfiniBand)";
}

// "" when got is want within the relative bound (NaN fails), else what differs and what to revisit.
std::string figure_problem(double got, double want, double bound, const std::string& what,
                           const char* unit = " s") {
  if (std::fabs(got - want) <= bound * std::fabs(want)) return "";
  return what + ": expected " + show(want) + unit + " (the core's simulator), got " + show(got) +
         unit +
         ". Revisit the cost of a ring all-reduce (its steps, the bytes each rank puts on the "
         "wire, the link the placement gives the group) and the step's critical path (what runs "
         "side by side, what must wait; handout, TODO 6)";
}

TEST(TpPlacement, StepFiguresAreTheSimulatorsAtSeededShapes) {
  const std::string test = "TpPlacement.StepFiguresAreTheSimulatorsAtSeededShapes";
  const pc::SeededShape shape = pc::seeded_shape(test);
  gtl::judge::Outputs out(test);
  for (int k : {1, 2, 4, 8}) {
    const pc::Traces traces = pc::traced_tp_step(k, shape.rows, shape.dim, /*uneven=*/true);
    const double bound = pc::relative_bound(traces);
    for (TpPlacement p : {TpPlacement::IntraNode, TpPlacement::InterNode}) {
      const bool across = p == TpPlacement::InterNode;
      const pc::Simulated want = pc::simulate(traces, across);
      const TpStepFigures got = [&] {
        const auto call = lab08_student_call::todo6();
        return tp_step_figures(traces, pc::cluster(across), p);
      }();
      out.record(got.step_time);
      out.record(got.comm_time);
      out.record(got.comm_fraction);
      const std::string who = "TP = " + std::to_string(k) + " " + placement_name(p) +
                              ", N = " + std::to_string(shape.rows) +
                              " tokens, D = " + std::to_string(shape.dim) + ", " +
                              gtl::test_seed::describe();
      EXPECT_EQ(figure_problem(got.step_time, want.step_time, bound, "step time, " + who), "");
      EXPECT_EQ(figure_problem(got.comm_time, want.comm_time, bound, "all-reduce time, " + who),
                "");
      EXPECT_EQ(figure_problem(got.comm_fraction, want.comm_fraction, 2 * bound,
                               "communication fraction, " + who, ""),
                "");
    }
  }
  // A group larger than a node cannot be placed inside one.
  const pc::Traces traces = pc::traced_tp_step(4, 256);
  gtl::dist::CostModel small_nodes = pc::cluster(false);
  small_nodes.ranks_per_node = 2;
  std::string message;
  try {
    const auto call = lab08_student_call::todo6();
    tp_step_figures(traces, small_nodes, TpPlacement::IntraNode);
  } catch (const gtl::Error& e) {
    message = e.what();
  }
  // The numbers the message names, as whole numbers (a line number such as 42 names neither).
  std::set<std::string> numbers;
  std::string digits;
  for (const char c : message + " ") {
    if (std::isdigit(static_cast<unsigned char>(c))) {
      digits += c;
    } else if (!digits.empty()) {
      numbers.insert(digits);
      digits.clear();
    }
  }
  const bool refused = numbers.count("4") > 0 && numbers.count("2") > 0;
  out.record(refused);
  EXPECT_TRUE(refused) << "TP = 4 inside one node of 2 ranks: expected a gtl::Error naming 4 and "
                          "2, got "
                       << (message.empty() ? "no error" : "\"" + message + "\"")
                       << ". Revisit the refusal in tensor_parallel.h, tp_step_figures";
}

TEST(TpPlacement, LargestSizeUnderTheBarForEachPlacement) {
  const std::string test = "TpPlacement.LargestSizeUnderTheBarForEachPlacement";
  std::map<int, pc::Traces> traces;
  for (int k : pc::kStudySizes) traces[k] = pc::traced_tp_step(k, pc::kReferenceRows);
  gtl::judge::Outputs out(test);
  for (TpPlacement p : {TpPlacement::IntraNode, TpPlacement::InterNode}) {
    const bool across = p == TpPlacement::InterNode;
    int want = 0;
    for (const auto& [k, t] : traces) {
      if (!across && k > pc::cluster(false).ranks_per_node) continue;
      const pc::Simulated s = pc::simulate(t, across);
      std::cout << "[ figures  ] TP = " << k << " " << placement_name(p) << ": simulated step "
                << s.step_time * 1e6 << " us, all-reduces " << s.comm_time * 1e6 << " us ("
                << s.comm_fraction << " of the step)\n";
      if (s.comm_fraction <= pc::kMaxCommFraction) want = k;
    }
    const int got = [&] {
      const auto call = lab08_student_call::todo6();
      return largest_tp_size(traces, pc::cluster(across), p, pc::kMaxCommFraction);
    }();
    out.record(got);
    EXPECT_EQ(got, want) << "the largest TP size " << placement_name(p)
                         << " whose all-reduces take at most 1/3 of the step, among sizes 1, 2, "
                            "4, 8, 16 (16 does not fit in a node of 8): expected "
                         << want << " (the core's simulator), got " << got
                         << ". Revisit which sizes a placement allows and tp_step_figures";
  }
  if (const char* dir = std::getenv("LAB08_FIGURES_DIR")) {  // regenerates the handout's figures
    for (bool across : {false, true}) {
      const gtl::dist::Timeline tl = pc::simulate(traces[4], across).timeline;
      const std::string name = std::string(dir) + (across ? "/tp4_inter_node" : "/tp4_intra_node");
      gtl::dist::write_chrome_trace(tl, name + ".json");
      gtl::dist::write_timeline_svg(tl, name + ".svg",
                                    across ? "TP = 4, one rank per node (InfiniBand; simulated)"
                                           : "TP = 4 inside one node (NVLink; simulated)");
    }
  }
}

}  // namespace
