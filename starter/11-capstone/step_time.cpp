// Lab 11, TODO 2: where the ranks sit, and how long one training step takes.
//
// The step's time is built from counted work, not guessed: the core's FLOPs of the slowest
// stage at a stated fraction of the peak, the bytes of every collective and send that lab 08,
// lab 07 and the DP synchronisation move over the link their group spans, and the 1F1B bubble.
// What overlaps what is a rule the handout states; nothing here is measured.
#include <algorithm>
#include <sstream>

#include "capstone.h"
#include "gtl/runtime/error.h"

namespace lab11 {

Placement place(const ClusterSpec& cluster, const Config& config) {
  Placement p;
  // TODO(lab11) step 2 (placement): validity and the link of each group.
  //   Spec: capstone.h, Placement. A world rank's node is rank / gpus_per_node.
  //   Hint: which ranks does each group hold, and when do they all share a node? About 20 lines.
  (void)cluster;
  (void)config;
  // END TODO(lab11)
  return p;
}

StepTime step_time(const ModelSpec& model, const ClusterSpec& cluster, const Config& config,
                   double achieved_mfu) {
  check_config(model, config);
  const Placement where = place(cluster, config);
  GTL_CHECK(where.valid, "step_time: " << describe(config) << ": " << where.reason);
  GTL_CHECK(achieved_mfu > 0.0 && achieved_mfu <= 1.0,
            "step_time: achieved MFU " << achieved_mfu << " (0 < MFU <= 1)");
  StepTime st;
  // TODO(lab11) step 2 (time): every part of StepTime.
  //   Spec: capstone.h, StepTime, and the handout's "Step time" (what each part counts, which
  //   link it uses, what overlaps nothing).
  //   Hint: first the time of ONE micro-batch on the slowest stage (compute, TP, sends); the
  //   step is m of them, the bubble, and the DP synchronisation. About 35 lines.
  // END TODO(lab11)
  return st;
}

}  // namespace lab11
