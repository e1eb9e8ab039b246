// Lab 11, TODO 1: the memory one GPU holds at the peak of a training step, by category.
//
// Every byte here is one the core or an earlier lab really holds (the handout's "Facts"): the
// weights of the layers this stage and TP rank own, the float32 gradients, AdamW's state, the
// tensors each layer saved for its backward, and what the step holds beside them at its peak. At
// dp = tp = pp = 1 the tests run the core's GPT on the allocator and compare, to the byte.
#include <algorithm>

#include "capstone.h"
#include "gtl/runtime/error.h"

namespace lab11 {

int64_t stage_parameters(const ModelSpec& model, const Config& config, int stage) {
  check_config(model, config);
  GTL_CHECK(stage >= 0 && stage < config.pp,
            "stage_parameters: stage " << stage << " of " << config.pp);
  // SOLUTION(lab11) step 1 (parameters)
  const int64_t d = model.dim, k = config.tp;
  const int64_t block = (12 * d * d + 7 * d) / k + 6 * d;  // cut: GEMM weights, qkv/fc1 bias
  int64_t p = model.layers / config.pp * block;
  if (stage == 0) p += model.vocab * d / k + model.context * d;  // wte by rows, wpe whole
  if (stage == config.pp - 1) {
    p += 2 * d;                                                       // ln_f
    if (!model.tied_head || config.pp > 1) p += model.vocab * d / k;  // the head's own table
  }
  return p;
  // END SOLUTION(lab11)
}

MemoryBreakdown stage_memory(const ModelSpec& model, const Config& config, int stage) {
  const int64_t params = stage_parameters(model, config, stage);
  MemoryBreakdown m;
  m.stage = stage;
  // SOLUTION(lab11) step 1 (memory)
  const bool fp32 = config.precision == Precision::Fp32;
  const int64_t c = fp32 ? 4 : 2;  // compute dtype
  const int64_t d = model.dim, k = config.tp, dp = config.dp, t = model.context;
  const int64_t n = config.micro_batch * t, scores = config.micro_batch * model.heads * t * t;
  const int64_t blocks = model.layers / config.pp;

  // ZeRO's units (F8): one per block, one for a tied table two stages hold, one for the rest of
  // the stage; each padded to dp.
  const int64_t block = (12 * d * d + 7 * d) / k + 6 * d;
  const bool copy = model.tied_head && config.pp > 1 && (stage == 0 || stage == config.pp - 1);
  const int64_t table = copy ? model.vocab * d / k : 0, rest = params - blocks * block - table;
  auto shard = [dp](int64_t numel) { return (numel + dp - 1) / dp; };
  const int64_t sharded = blocks * shard(block) + shard(table) + shard(rest);
  const int64_t gathered_unit = shard(block) * dp;  // one block's padded full buffer
  const int64_t gathered_others = (shard(table) + shard(rest)) * dp;  // whole through the backward

  const int64_t opt_bytes = fp32 ? 8 : 12;  // m, v (+ float32 masters)
  m.optimizer = opt_bytes * (config.zero_stage >= 1 ? sharded : params);
  if (config.zero_stage == 0) {
    m.gradients = 4 * params;
  } else {  // ZeRO-1: the whole gradient, padded; ZeRO-2/3: the shards, one block's buffer and
            // the stage's other units' buffers
    m.gradients =
        config.zero_stage == 1 ? 4 * sharded * dp : 4 * (sharded + gathered_unit + gathered_others);
  }
  if (config.zero_stage == 0) {
    m.parameters = c * params;
  } else if (config.zero_stage < 3) {  // the full values, padded; in float32 also their shard
    m.parameters = c * sharded * dp + (fp32 ? 4 * sharded : 0);  // (bf16: the shard = master)
  } else {  // fp32: the value shards are the weights; bf16: they are the masters (optimizer)
    m.parameters = (fp32 ? 4 * sharded : 0) + c * (gathered_unit + gathered_others);
  }

  // A block's saved bytes for one micro-batch on one TP rank.
  const int64_t sp = config.sequence_parallel ? k : 1;
  const int64_t layernorms = 2 * (4 * n * d + 8 * n) / sp;  // x, mean, rstd: float32
  const int64_t whole = 2 * n * d * c;                      // the qkv and fc1 inputs, gathered
  const int64_t cut = (12 * n * d + scores) * c / k;        // q, k, v, P, merged, fc1, GELU
  const int64_t saved = layernorms + whole + cut;
  const int64_t input = 4 * n * d / sp;
  const int64_t in_flight = std::min<int64_t>(config.pp - stage, config.accumulation);
  m.activations = config.activation_checkpointing ? in_flight * blocks * input + (saved - input)
                                                  : in_flight * blocks * saved;

  // What the backward holds beyond the saved tensors: on the last stage the head's dx and the
  // block's incoming gradient, the logits and dlogits, the loss; elsewhere the gradient the next
  // stage sent. Then the largest moment (F15): the last block's backward (fc2's or qkv's
  // transients), a block's forward (attention's and fc2's outputs and the block's, all-reduced,
  // whole), which with checkpointing is the last block's recomputation inside that backward, or
  // on the last stage ln_f's backward, before that recomputation.
  const bool last = stage == config.pp - 1;
  const int64_t nd = n * d, v = model.vocab / k;
  // Under ZeRO-2 and -3 the categories above count F9's whole buffers of a block (and of the
  // stage's other units) that a forward, and ln_f's backward, run without: no gradient buffer
  // exists in a forward, and ln_f's backward comes before any block's window.
  const bool windows = config.zero_stage >= 2;
  const int64_t forward_without = windows ? 4 * (gathered_unit + gathered_others) : 0;
  const int64_t lnf_without =
      windows ? 4 * gathered_unit + (config.zero_stage == 3 ? c * gathered_unit : 0) : 0;
  // The loss's backward comes before the stage's: none of F9's buffers (bf16 only: in float32
  // the loss's moments never win, F5).
  const int64_t loss_without =
      windows ? (4 + (config.zero_stage == 3 ? c : 0)) * (gathered_unit + gathered_others) : 0;
  const int64_t recomputed = config.activation_checkpointing ? saved - input : 0;  // not yet
  int64_t held = 0;
  if (fp32) {
    held = last ? 4 * (2 * nd / sp) + 4 * 2 * n * v + 4 : 4 * nd / sp;
    // Under SP fc2's backward first gathers its dy whole; qkv's dx is scattered to the rank's
    // positions once its bias gradient is freed, and the MLP's tensors it outlives are cut.
    const int64_t fc2 = 4 * n * d / k + d + (sp > 1 ? nd : 0);
    const int64_t qkv = sp > 1 ? 2 * scores / k - 2 * n / k - nd / k + std::max(3 * d / k, nd / k)
                               : 2 * scores / k - nd / k - 2 * n + 3 * d / k;
    const int64_t backward = 4 * std::max(fc2, qkv);
    const int64_t forward = sp > 1 ? 4 * (n * d + 2 * n * d / k) : 12 * n * d;
    m.other = std::max(held + backward, config.activation_checkpointing
                                            ? held + forward  // the recomputation, in the window
                                            : forward - forward_without);
    if (last) {  // ln_f's backward: its input, mean and rstd, its dx, its two parameter
                 // gradients; before it the head's: its gathered input and its dx whole, beside
                 // ln_f's saved tensors (the held gradients not made yet; under SP an untied head
                 // scatters its dx while its input is still saved). Both before the last block's
                 // recomputation.
      const int64_t ln_f = held + 4 * ((nd + 2 * n) / sp + 2 * d);
      const int64_t head = held - 4 * 2 * nd / sp + 4 * (nd + 2 * n) / sp + 4 * 2 * nd +
                           (sp > 1 && !model.tied_head ? 4 * nd / sp : 0);
      m.other = std::max(m.other, std::max(ln_f, head) - recomputed - lnf_without);
    }
  } else {
    // bf16-mixed (F15): the GEMMs make their outputs and weight gradients in bf16; a layer whose
    // input was float32 widens its dx back; a backward that accumulates widens its bf16 dW to a
    // float32 copy before adding it (6 bytes per weight element, 2 when it overwrites).
    held = last ? (model.tied_head ? 6 : 8) * nd / sp + 4 * n * v + 4 : 4 * nd / sp;
    const int64_t column_dx = sp > 1 ? std::max(2 * nd + 2 * nd / k, 6 * nd / k) : 6 * nd;
    const int64_t forward =
        sp > 1 ? std::max({4 * nd - 2 * nd / k, 2 * nd + 4 * nd / k, 12 * nd / k}) : 12 * nd;
    auto moments = [&](bool accumulating) {
      auto dw = [&](int64_t weights) { return (accumulating ? 6 : 2) * weights; };
      const int64_t fc2 =
          (sp > 1 ? 4 * nd : 0) + 2 * nd + 8 * nd / k + std::max(dw(4 * d * d / k), 4 * d);
      const int64_t fc1 =
          -8 * nd / k + std::max(2 * nd + std::max(dw(4 * d * d / k), 16 * d / k), column_dx);
      const int64_t qkv = 4 * scores / k - 2 * nd / k - 8 * n / sp - 2 * nd +
                          std::max(2 * nd + std::max(dw(3 * d * d / k), 12 * d / k), column_dx);
      int64_t most =
          std::max(held + std::max({fc2, fc1, qkv}),
                   config.activation_checkpointing ? held + forward : forward - forward_without);
      if (last) {  // ln_f's backward (a tied head's bf16 dx and its float32 copy both held), and
                   // before it the head's and the loss's, beside ln_f's saved tensors and the
                   // head's bf16 input (whole)
        const int64_t ln_f =
            held + (model.tied_head ? 4 * nd / sp : 0) + 4 * ((nd + 2 * n) / sp + 2 * d);
        const int64_t before_head =
            held - (model.tied_head ? 6 : 8) * nd / sp + 4 * (nd + 2 * n) / sp + 2 * nd;
        const int64_t head =
            before_head +
            (model.tied_head ? 2 * nd + dw(v * d) : std::max(2 * nd + dw(v * d), column_dx));
        const int64_t loss = before_head + 6 * n * v + (k > 1 ? 4 * n : 0);
        most = std::max({most, std::max(ln_f, head) - recomputed - lnf_without,
                         loss - recomputed - loss_without});
      }
      return most;
    };
    m.other = moments(false);
    if (config.zero_stage <= 1 && config.accumulation > 1) {  // the later backwards accumulate,
      // the next one with a micro-batch fewer held when m <= pp - s
      const int64_t fewer = in_flight > config.accumulation - 1 ? 1 : 0;
      const int64_t one =
          (config.activation_checkpointing ? input : saved) * blocks + (stage == 0 ? 8 * n : 0);
      m.other = std::max(m.other, moments(true) - fewer * one);
    }
  }
  if (stage == 0) {  // the token table's gradient, whole, after this micro-batch's activations
    const int64_t mine =
        config.activation_checkpointing ? blocks * input + recomputed : blocks * saved;
    const int64_t stream = last ? held - 4 * nd / sp : held;
    m.other = std::max(m.other, stream + 4 * nd + 4 * v * d - mine - lnf_without);
  }
  if (stage == 0) m.other += 8 * n * in_flight;  // ids
  if (last) m.other += 8 * n;                    // targets
  // END SOLUTION(lab11)
  return m;
}

MemoryBreakdown memory_per_gpu(const ModelSpec& model, const Config& config) {
  MemoryBreakdown most = stage_memory(model, config, 0);
  for (int s = 1; s < config.pp; ++s) {
    const MemoryBreakdown m = stage_memory(model, config, s);
    if (m.total() > most.total()) most = m;
  }
  return most;
}

bool fits(const ModelSpec& model, const ClusterSpec& cluster, const Config& config) {
  return memory_per_gpu(model, config).total() <= cluster.gpu_memory_bytes;
}

}  // namespace lab11
