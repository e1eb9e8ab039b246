// Lab 11, the capstone: plan a 3-D parallel training run of the core's GPT. For a model and a
// cluster, model the memory each GPU holds and the time of one step under a DP x TP x PP
// configuration, find the best configuration that fits, and report it.
//
// This header is part of the pristine lab (labs/11-capstone/include): do not edit it. Your files
// are in starter/11-capstone/, one per TODO; the map from TODO to file, test and check is in the
// handout, labs/11-capstone/README.md. Everything here is arithmetic on the CPU: the models are
// the course's own layers counted exactly (the handout's "Facts" say what each earlier lab and the
// core hold), not rules of thumb, and at dp = tp = pp = 1 the memory model must equal the core's
// allocator to the byte (the tests run the core's GPT to check it).
//
// The words used throughout (handout, "Background"):
//   T        the sequence length of a training step: the model's context, every step
//   N        the tokens of ONE micro-batch: micro_batch x T
//   stage    one of the pp pipeline stages; stage s holds blocks [s L/pp, (s+1) L/pp), stage 0
//            also the embeddings, the last stage (pp - 1) also the final LayerNorm and the head
//   k        the tensor-parallel size tp
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

namespace gtl::dist {
struct Timeline;  // gtl/distributed/timeline.h: what step_timeline returns
}

namespace lab11 {

// The core's GPT (gtl/nn/gpt.h): L pre-LN blocks of width D with H heads, a vocabulary of V byte
// or token ids, C learned positions, the head tied to the token table (the default) or its own
// [V, D] matrix. A training step runs on sequences of T = context positions.
struct ModelSpec {
  int64_t layers = 2;
  int64_t dim = 64;
  int64_t heads = 4;
  int64_t vocab = 256;
  int64_t context = 64;
  bool tied_head = true;
};

// A cluster of `nodes` identical nodes of `gpus_per_node` GPUs. Inside a node the GPUs talk over
// NVLink (intra_node_bytes_per_s per GPU and direction), between nodes over InfiniBand
// (inter_node_bytes_per_s per GPU and direction). peak_flops: one GPU's dense peak in the
// precision the run computes in.
struct ClusterSpec {
  int nodes = 1;
  int gpus_per_node = 8;
  int64_t gpu_memory_bytes = 80'000'000'000;
  double intra_node_bytes_per_s = 450e9;
  double inter_node_bytes_per_s = 50e9;
  double peak_flops = 989e12;
};

enum class Precision {
  Fp32,       // weights, gradients, activations and AdamW all float32 (the core's default)
  Bf16Mixed,  // GEMMs and their saved inputs in bf16 on a bf16 compute copy of the weights;
              // fp32 master weights, gradients, AdamW's m and v; LayerNorm, softmax's
              // arithmetic, the residual stream and the loss in float32 (docs/core.md)
};

// One configuration of a run: dp x tp x pp GPUs.
//   zero_stage         0 plain data parallelism; 1 optimizer state sharded over the dp ranks;
//                      2 gradients too; 3 parameters too (lab 06)
//   sequence_parallel  lab 08's sequence parallelism in every block (only meaningful for tp > 1)
//   micro_batch        sequences per micro-batch on one DP rank
//   accumulation       micro-batches per step per DP rank (m: the pipeline's micro-batch count)
//   activation_checkpointing  every block checkpointed (nn::ActivationCheckpoint)
// One step consumes micro_batch x accumulation x dp sequences of T tokens.
struct Config {
  int dp = 1;
  int tp = 1;
  int pp = 1;
  int zero_stage = 0;
  bool sequence_parallel = false;
  int64_t micro_batch = 1;
  int64_t accumulation = 1;
  bool activation_checkpointing = false;
  Precision precision = Precision::Fp32;
};

// The parameters of the whole model, as the core's GPT counts them:
// P = V*D + C*D + L(12 D^2 + 13 D) + 2D, plus V*D when the head is untied (docs/core.md).
inline int64_t gpt_parameter_count(const ModelSpec& m) {
  const int64_t d = m.dim;
  return m.vocab * d + m.context * d + m.layers * (12 * d * d + 13 * d) + 2 * d +
         (m.tied_head ? 0 : m.vocab * d);
}

// Given (src/config_checks.cpp): throws gtl::Error, naming the numbers, unless dp, tp, pp,
// micro_batch and accumulation are >= 1, zero_stage is 0 to 3, tp divides the heads and the
// vocabulary (lab 08 refuses to cut a head or pad a vocabulary), pp divides the layers (equal
// stages), and, with sequence_parallel, tp divides T (lab 08 refuses otherwise).
void check_config(const ModelSpec& model, const Config& config);

// ---- TODO 1. Memory per GPU (memory_model.cpp) -------------------------------------------------
// Bytes one GPU holds at the peak of a training step, by category. The handout ("Facts") states
// what the core, lab 06 (ZeRO), lab 07 (1F1B) and lab 08 (TP, SP) hold, and where in the step the
// peak is; the categories are:
//   parameters   the weights the forward reads (fp32: the float32 weights; bf16-mixed: the bf16
//                compute copy), the stage's and this TP rank's only; under fp32 ZeRO-1/2 also
//                the rank's shard of them (the values AdamW updates); under ZeRO-3 the rank's
//                shard plus the units gathered at the peak (F9; bf16-mixed: only the gathered
//                units' bf16 copy: the persistent shard is the float32 master, under optimizer)
//   gradients    the float32 gradients (under ZeRO-2/3: the shard plus the units' full
//                gradients at the peak, F9; a buffer ZeRO keeps whole is padded: F8)
//   optimizer    AdamW's m and v, and under bf16-mixed the float32 master weights (sharded from
//                ZeRO-1 on)
//   activations  the tensors the blocks saved for their backward, of every micro-batch the 1F1B
//                schedule holds on this stage at the peak (with checkpointing: the blocks' inputs
//                and the recomputed block)
//   other        everything else at the peak: the batch's ids and targets, the logits, their
//                gradient and the loss on the last stage, and the backward's transient tensors
// The peak is one moment of the step (F15). Whichever moment wins, parameters, gradients and
// activations are counted as they stand in the stage's last block's backward (F9's buffers of a
// block's window, F11's micro-batches in flight), and other is the peak less the other four:
// when a forward, ln_f's, the head's, the loss's or the embedding's backward wins, other absorbs
// what that moment holds more or less than the block's backward in the other categories.
struct MemoryBreakdown {
  int64_t parameters = 0;
  int64_t gradients = 0;
  int64_t optimizer = 0;
  int64_t activations = 0;
  int64_t other = 0;
  int stage = 0;  // the pipeline stage these bytes are of
  int64_t total() const { return parameters + gradients + optimizer + activations + other; }
};

// 1. The parameters one GPU of stage `stage` holds: its blocks, and the embeddings, final
// LayerNorm and head where that stage has them, as rank 0 of its TP group holds them (lab 08's
// shards; what lab 08 replicates, replicated). Unsharded by ZeRO (that is the breakdown's job).
// Throws gtl::Error (check_config, and 0 <= stage < pp).
int64_t stage_parameters(const ModelSpec& model, const Config& config, int stage);

// 1. The bytes one GPU of stage `stage` holds at that stage's peak, by category. Throws gtl::Error
// as stage_parameters.
MemoryBreakdown stage_memory(const ModelSpec& model, const Config& config, int stage);

// Given (memory_model.cpp, outside the TODO): the most loaded stage, the one whose total is the
// largest (the lowest stage among equals): every GPU of the run must hold it.
MemoryBreakdown memory_per_gpu(const ModelSpec& model, const Config& config);

// Given: whether the most loaded stage's total fits one GPU's memory (<= gpu_memory_bytes).
bool fits(const ModelSpec& model, const ClusterSpec& cluster, const Config& config);

// ---- TODO 2. Step time (step_time.cpp) ---------------------------------------------------------
// Where a group's collectives run: no link (a group of one), NVLink inside a node, InfiniBand
// between nodes.
enum class Link { None, IntraNode, InterNode };

// Where the dp x tp x pp ranks sit (Megatron-LM's order, the core's ProcessGrid's): world rank
// r = (d * pp + s) * tp + t for DP rank d, stage s, TP rank t, node r / gpus_per_node. A TP
// group is tp consecutive ranks, a pipeline takes every tp-th rank, a DP group every (tp pp)-th.
// valid: dp * tp * pp is the cluster's GPU count and every TP group lies inside one node; else
// `reason` says which rule failed, naming the numbers. Each link: the slowest link any of the
// group's ranks crosses to a neighbour of the group (None for a group of one).
struct Placement {
  bool valid = false;
  std::string reason;
  Link tp = Link::None, pp = Link::None, dp = Link::None;
};

// 2. The placement of `config` on `cluster`.
Placement place(const ClusterSpec& cluster, const Config& config);

// One training step's time on the slowest pipeline stage, in seconds, by part (the handout's
// "Step time" states what each part holds and what overlaps nothing):
//   compute_s   the m micro-batches' forward and backward (and recomputation) FLOPs of the
//               slowest stage on one GPU at `achieved_mfu` of the peak
//   tp_comm_s   the TP collectives of those m micro-batches
//   pp_comm_s   the point-to-point sends of those m micro-batches
//   bubble_s    the 1F1B bubble: the idle time of pp - 1 micro-batch slots
//   dp_comm_s   the DP gradient synchronisation (ZeRO's collectives instead, under ZeRO)
//   step_s      their sum
//   tokens_per_s  the global batch's tokens per second
//   mfu           the model's FLOPs of the step (6N + 12LTD per token, no recomputation) over
//                 step_s x the GPUs' peak
struct StepTime {
  double compute_s = 0, tp_comm_s = 0, pp_comm_s = 0, bubble_s = 0, dp_comm_s = 0, step_s = 0;
  double tokens_per_s = 0, mfu = 0;
};

// 2. Throws gtl::Error (check_config; an invalid placement, with its reason; achieved_mfu not in
// (0, 1]).
StepTime step_time(const ModelSpec& model, const ClusterSpec& cluster, const Config& config,
                   double achieved_mfu);

// Given (src/step_timeline.cpp): one step of `config` as the model prices it `time` (TODO 2's),
// drawn as a timeline of one DP replica's pipeline (every DP replica and TP rank runs the same):
// process s = stage s, its m forward and m backward passes in 1F1B's order on the compute stream
// (every stage priced as the slowest, S5; a forward a third of a slot's compute and 2 of its 4 TP
// collectives, a quarter and 2 of 6 when checkpointed, half its sends), each pass's TP collectives
// and send on the communication stream after it (nothing overlaps), an "idle (bubble)" interval
// wherever a stage waits for a neighbour, and after a stage's last backward its DP synchronisation
// (time.dp_comm_s; under ZeRO-2/3 its per-micro-batch part drawn there too). The schedule is
// simulated, not read off the model: its step_time() equals time.step_s, and every stage's "idle
// (bubble)" intervals sum to time.bubble_s, exactly when the model's bubble is 1F1B's.
// gtl::dist::to_chrome_trace writes it for ui.perfetto.dev (lab11_plan --trace-dir).
gtl::dist::Timeline step_timeline(const Config& config, const StepTime& time);

// The core's model FLOPs per token of a training step, 6N + 12 L T D with N = 12 L D^2 + V D
// (every GEMM weight; the tied table once, the position table not: docs/core.md, "MFU").
inline double model_flops_per_token(const ModelSpec& m) {
  const double d = static_cast<double>(m.dim), l = static_cast<double>(m.layers);
  const double n = 12.0 * l * d * d + static_cast<double>(m.vocab) * d;
  return 6.0 * n + 12.0 * l * static_cast<double>(m.context) * d;
}

// ---- TODO 3. The search (search.cpp) -----------------------------------------------------------
// What to plan for: a step of global_batch_tokens tokens, in one precision, at a stated MFU.
struct SearchRequest {
  int64_t global_batch_tokens = 0;
  Precision precision = Precision::Bf16Mixed;
  double achieved_mfu = 0.5;
  int64_t max_micro_batch = 8;  // micro-batches of 1, 2, 4, ... up to this many sequences
};

// One configuration of the space, judged.
struct Candidate {
  Config config;
  int64_t memory_bytes = 0;  // the most loaded stage's total
  double tokens_per_s = 0;
  bool fits = false;  // memory_bytes <= the cluster's gpu_memory_bytes
};

// The outcome: every candidate of the space in its order, and the best one that fits.
struct Plan {
  bool feasible = false;  // some candidate fits; else `best` is a default Candidate
  Candidate best;
  std::vector<Candidate> candidates;
};

// How the search prices a configuration (the overload below passes TODO 1's and TODO 2's).
using MemoryFn = std::function<int64_t(const Config&)>;
using SpeedFn = std::function<double(const Config&)>;

// 3. The space, in this order (outermost first), every tuple that passes every rule:
//   tp        1, 2, 4, ... dividing gpus_per_node, the heads and the vocabulary
//   pp        1, 2, 3, ... dividing the layers, with tp pp dividing the cluster's GPUs;
//             dp = GPUs / (tp pp)
//   zero_stage 0, 1, 2, 3
//   sequence_parallel  false, then true (true only for tp > 1 dividing T)
//   micro_batch  1, 2, 4, ... up to request.max_micro_batch
//   accumulation  global_batch_tokens / (micro_batch dp T): the tuple is in the space only when
//                 that is an integer >= 1
//   activation_checkpointing  false, then true
//   precision  request.precision
// Each candidate priced with `memory` and `speed` (each called once per candidate). The best:
// the highest tokens_per_s among the candidates that fit; among exactly equal speeds the smaller
// memory_bytes; among those the earliest in the order above. No candidate fitting (or none at
// all) is not an error: feasible = false. Throws gtl::Error when global_batch_tokens < 1 or
// max_micro_batch < 1.
Plan search(const ModelSpec& model, const ClusterSpec& cluster, const SearchRequest& request,
            const MemoryFn& memory, const SpeedFn& speed);

// Given (search.cpp, outside the TODO): the search priced with memory_per_gpu and step_time.
Plan search(const ModelSpec& model, const ClusterSpec& cluster, const SearchRequest& request);

// ---- TODO 4. The report (report.cpp) -----------------------------------------------------------
// 4. The Pareto front of the candidates of `plan` that fit: those for which no other fitting
// candidate is at least as fast (tokens_per_s) AND holds no more memory (memory_bytes), being
// strictly better in one. Fastest first, equally fast ones in the order of plan.candidates; the
// first `rows` of them, as a Markdown table. Reads plan.feasible and plan.candidates only.
// Exactly these lines, each ending in "\n":
//   | # | configuration | memory (GiB) | tokens/s |
//   |---|---|---|---|
//   | 1 | <describe(config)> | <memory_bytes / 2^30, "%.2f"> | <tokens_per_s, "%.0f"> |
//   ...
// Fewer rows when the front is shorter. A plan that is not feasible: the one line
// "No configuration fits.\n".
// Throws gtl::Error when rows < 1.
std::string plan_table(const Plan& plan, int rows);

// 4. One GPU's memory as an SVG: the five categories stacked bottom to top (parameters first)
// in a bar 400 px tall for max(total, gpu_memory_bytes) bytes standing on y = 420 (SVG's y grows
// downwards), and a line at the GPU's memory. One element a line, Y (a top edge) and H "%.2f":
//   <svg xmlns="http://www.w3.org/2000/svg" width="200" height="440">
//   <rect data-category="parameters" x="60" y="Y" width="80" height="H" fill="#4e79a7"/>
//   (one per category, in order; fills #4e79a7, #f28e2b, #e15759, #76b7b2, #59a14f)
//   <line data-limit="gpu" x1="40" x2="160" y1="Y" y2="Y" stroke="black"/>
//   </svg>
// Throws gtl::Error when gpu_memory_bytes < 1 or a category is negative.
std::string memory_svg(const MemoryBreakdown& memory, int64_t gpu_memory_bytes);

// "dp 2 x tp 4 x pp 2, ZeRO-1, SP, micro-batch 1 x 8, bf16, checkpointed": for messages.
std::string describe(const Config& config);
std::string describe(const ModelSpec& model);

}  // namespace lab11
