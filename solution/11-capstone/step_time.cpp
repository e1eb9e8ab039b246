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
  // SOLUTION(lab11) step 2 (placement)
  const int gpus = cluster.nodes * cluster.gpus_per_node;
  if (config.dp * config.tp * config.pp != gpus) {
    std::ostringstream s;
    s << "dp x tp x pp = " << config.dp * config.tp * config.pp << " GPUs, the cluster has "
      << gpus;
    p.reason = s.str();
    return p;
  }
  if (cluster.gpus_per_node % config.tp != 0) {
    std::ostringstream s;
    s << "a TP group of " << config.tp << " spans nodes of " << cluster.gpus_per_node << " GPUs";
    p.reason = s.str();
    return p;
  }
  p.valid = true;
  p.tp = config.tp > 1 ? Link::IntraNode : Link::None;
  const int span = config.tp * config.pp;
  if (config.pp > 1) p.pp = cluster.gpus_per_node % span == 0 ? Link::IntraNode : Link::InterNode;
  if (config.dp > 1) p.dp = cluster.nodes == 1 ? Link::IntraNode : Link::InterNode;
  // END SOLUTION(lab11)
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
  // SOLUTION(lab11) step 2 (time)
  const auto bandwidth = [&](Link l) {
    return l == Link::InterNode ? cluster.inter_node_bytes_per_s : cluster.intra_node_bytes_per_s;
  };
  const double c = config.precision == Precision::Fp32 ? 4.0 : 2.0;
  const double d = static_cast<double>(model.dim), t = static_cast<double>(model.context);
  const double k = config.tp, layers = static_cast<double>(model.layers / config.pp);
  const double n = static_cast<double>(config.micro_batch) * t;  // tokens of a micro-batch
  const double m = static_cast<double>(config.accumulation);

  // The last stage is the slowest: its blocks and the head.
  double flops =
      (72.0 * d * d * layers + 12.0 * layers * t * d + 6.0 * static_cast<double>(model.vocab) * d) /
      k;
  if (config.activation_checkpointing) flops += (24.0 * d * d * layers + 4.0 * layers * t * d) / k;
  const double compute = n * flops / (achieved_mfu * cluster.peak_flops);

  double tp_comm = 0;
  if (config.tp > 1) {
    const double calls = (config.activation_checkpointing ? 6.0 : 4.0) * layers;
    tp_comm = calls * 2.0 * (k - 1.0) / k * n * d * c / bandwidth(where.tp);
  }
  double pp_comm = 0;
  if (config.pp > 1) {  // the residual stream, float32 in both precisions
    const double shard = config.sequence_parallel ? k : 1.0;
    pp_comm = 2.0 * n * d * 4.0 / shard / bandwidth(where.pp);
  }
  const double micro = compute + tp_comm + pp_comm;
  st.compute_s = m * compute;
  st.tp_comm_s = m * tp_comm;
  st.pp_comm_s = m * pp_comm;
  st.bubble_s = (config.pp - 1) * micro;

  if (config.dp > 1) {
    const double dp = config.dp;
    const double p = static_cast<double>(gpt_parameter_count(model)) / (k * config.pp);
    const double ring = (dp - 1.0) / dp / bandwidth(where.dp);
    const double pass = 4.0 * p * ring;  // one reduce-scatter of the float32 gradients
    const double gather = c * p * ring;  // one all-gather of the values (F8: the compute copy)
    if (config.zero_stage == 0) {
      st.dp_comm_s = 2.0 * pass;  // an all-reduce
    } else {
      // ZeRO-1: one reduce-scatter and one gather a step. ZeRO-2 and -3 keep no whole gradient
      // across a micro-batch: a reduce-scatter each; ZeRO-3 gathers for every forward and
      // backward.
      const double scatters = config.zero_stage == 1 ? 1.0 : m;
      st.dp_comm_s = scatters * pass + (config.zero_stage == 3 ? 2.0 * m : 1.0) * gather;
    }
  }
  st.step_s = st.compute_s + st.tp_comm_s + st.pp_comm_s + st.bubble_s + st.dp_comm_s;
  const double tokens = n * m * config.dp;
  st.tokens_per_s = tokens / st.step_s;
  st.mfu = model_flops_per_token(model) * st.tokens_per_s /
           (static_cast<double>(config.dp) * k * config.pp * cluster.peak_flops);
  // END SOLUTION(lab11)
  return st;
}

}  // namespace lab11
