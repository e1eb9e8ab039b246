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
  // SOLUTION(lab11) step 3
  const int gpus = cluster.nodes * cluster.gpus_per_node;
  const int64_t t = model.context;
  for (int tp = 1; tp <= gpus; tp *= 2) {
    if (cluster.gpus_per_node % tp != 0 || model.heads % tp != 0 || model.vocab % tp != 0) continue;
    for (int pp = 1; pp <= model.layers; ++pp) {
      if (model.layers % pp != 0 || gpus % (tp * pp) != 0) continue;
      const int dp = gpus / (tp * pp);
      for (int zero = 0; zero <= 3; ++zero) {
        for (bool sp : {false, true}) {
          if (sp && (tp == 1 || t % tp != 0)) continue;
          for (int64_t mb = 1; mb <= request.max_micro_batch; mb *= 2) {
            const int64_t per_step = mb * dp * t;
            if (request.global_batch_tokens % per_step != 0) continue;
            for (bool ckpt : {false, true}) {
              Candidate c;
              c.config.dp = dp;
              c.config.tp = tp;
              c.config.pp = pp;
              c.config.zero_stage = zero;
              c.config.sequence_parallel = sp;
              c.config.micro_batch = mb;
              c.config.accumulation = request.global_batch_tokens / per_step;
              c.config.activation_checkpointing = ckpt;
              c.config.precision = request.precision;
              c.memory_bytes = memory(c.config);
              c.tokens_per_s = speed(c.config);
              c.fits = c.memory_bytes <= cluster.gpu_memory_bytes;
              plan.candidates.push_back(c);
            }
          }
        }
      }
    }
  }
  for (const Candidate& c : plan.candidates) {
    if (!c.fits) continue;
    const bool better =
        !plan.feasible || c.tokens_per_s > plan.best.tokens_per_s ||
        (c.tokens_per_s == plan.best.tokens_per_s && c.memory_bytes < plan.best.memory_bytes);
    if (better) {
      plan.best = c;
      plan.feasible = true;
    }
  }
  // END SOLUTION(lab11)
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
