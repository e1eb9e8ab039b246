// One pipeline stage of the GPT (see gpt_stage.h): the layers of gpt.cpp, a contiguous run of
// them, each drawn at the generator offset the whole model reaches it at.
#include "gtl/nn/gpt_stage.h"

#include <algorithm>
#include <string>

#include "gtl/nn/activation_checkpoint.h"
#include "gtl/nn/gpt_block.h"
#include "gtl/nn/layernorm.h"
#include "gtl/nn/linear.h"
#include "gtl/nn/position_embedding.h"
#include "gtl/nn/precision.h"
#include "gtl/nn/tensor_parallel.h"
#include "gtl/nn/tied_head.h"
#include "gtl/nn/token_embedding.h"

namespace gtl::nn {

namespace {

// Counters each layer of GPT(config) draws (tensor.h: a uniform tensor draws one per element, a
// normal one an even number): where each layer's initial values start in the whole model.
uint64_t even(uint64_t n) {
  return (n + 1) & ~uint64_t{1};
}
uint64_t table_draws(int64_t rows, int64_t dim) {
  return even(static_cast<uint64_t>(rows * dim));
}
uint64_t block_draws(int64_t dim) {  // qkv, proj, fc1, fc2: weights and biases, uniform
  return static_cast<uint64_t>(12 * dim * dim + 9 * dim);
}

// Builds a layer at `offset` and checks it drew `draws` counters (a changed layer must change
// the counts here, or the stages would silently stop matching the whole model).
template <typename Build>
std::unique_ptr<Module> drawn_at(uint64_t seed, uint64_t offset, uint64_t draws, Build build) {
  Generator gen(seed);
  gen.set_offset(offset);
  std::unique_ptr<Module> m = build(gen);
  GTL_CHECK(gen.offset() == offset + draws,
            "GPTStage: " << m->kind() << " drew " << gen.offset() - offset
                         << " random numbers, GPT's layout says " << draws
                         << "; fix the counts in gpt_stage.cpp");
  return m;
}

}  // namespace

GPTStage::GPTStage(const GPTConfig& config, int stage, int stages, dist::Communicator* tp,
                   bool sequence_parallel)
    : Module("gpt_stage"),
      config_(config),
      stage_(stage),
      stages_(stages),
      tp_(tp != nullptr && tp->world_size() > 1 ? tp : nullptr),
      sp_(sequence_parallel && tp_ != nullptr) {
  const GPTConfig& c = config_;
  GTL_CHECK(c.vocab > 0 && c.context > 0 && c.layers >= 0 && c.heads > 0 && c.dim > 0 &&
                c.dim % c.heads == 0,
            "GPTStage: expected positive vocab, context, dim, heads (heads dividing dim) and "
            "layers >= 0, got vocab "
                << c.vocab << ", context " << c.context << ", dim " << c.dim << ", heads "
                << c.heads << ", layers " << c.layers);
  GTL_CHECK(stages >= 1 && c.layers % stages == 0 && (c.layers > 0 || stages == 1) && stage >= 0 &&
                stage < stages,
            "GPTStage: expected stage in [0, stages) and stages dividing the "
                << c.layers << " layers into equal stages, got stage " << stage << " of "
                << stages);
  for (int64_t b : c.checkpoint_blocks) {
    GTL_CHECK(b >= 0 && b < c.layers, "GPTStage: checkpoint_blocks lists block "
                                          << b << ", but the model has " << c.layers);
  }
  if (tp_ != nullptr) {  // before drawing anything: the layers' own checks would say less
    tensor_parallel::part(c.heads, tp_->rank(), tp_->world_size(), "heads");
    tensor_parallel::part(c.vocab, tp_->rank(), tp_->world_size(), "vocabulary rows");
  }
  const uint64_t wte_draws = table_draws(c.vocab, c.dim);
  const uint64_t blocks_at = wte_draws + table_draws(c.context, c.dim);
  // Each layer drawn whole, then cut to this rank's shard under TP.
  auto token_table = [&](Generator& gen) -> std::unique_ptr<Module> {
    auto whole = std::make_unique<TokenEmbedding>(c.vocab, c.dim, gen);
    if (tp_ == nullptr) return whole;
    return tensor_parallel::shard(*whole, *tp_);
  };
  if (is_first()) {
    wte_ = &add_child("wte", drawn_at(c.seed, 0, wte_draws, token_table));
    wpe_ = &add_child("wpe", drawn_at(c.seed, wte_draws, blocks_at - wte_draws, [&](Generator& g) {
                        return std::make_unique<PositionEmbedding>(c.context, c.dim, g);
                      }));
  }
  const int64_t per_stage = c.layers / stages;
  first_block_ = stage * per_stage;
  for (int64_t l = first_block_; l < first_block_ + per_stage; ++l) {
    std::unique_ptr<Module> m =
        drawn_at(c.seed, blocks_at + static_cast<uint64_t>(l) * block_draws(c.dim),
                 block_draws(c.dim), [&](Generator& gen) -> std::unique_ptr<Module> {
                   auto whole = std::make_unique<GPTBlock>(c.dim, c.heads, gen);
                   if (tp_ == nullptr) return whole;
                   return tensor_parallel::shard(*whole, *tp_, sp_);
                 });
    const bool checkpointed =
        c.checkpoint || std::find(c.checkpoint_blocks.begin(), c.checkpoint_blocks.end(), l) !=
                            c.checkpoint_blocks.end();
    if (checkpointed) m = std::make_unique<ActivationCheckpoint>(std::move(m));
    blocks_.push_back(&add_child("h." + std::to_string(l), std::move(m)));
  }
  if (!is_last()) return;
  auto ln_f = std::make_unique<LayerNorm>(c.dim);
  if (sp_) ln_f->set_sequence_parallel(tp_);
  ln_f_ = &add_child("ln_f", std::move(ln_f));
  const uint64_t head_at = blocks_at + static_cast<uint64_t>(c.layers) * block_draws(c.dim);
  if (!c.tie_head) {
    head_ = &add_child("head", drawn_at(c.seed, head_at, static_cast<uint64_t>(c.vocab * c.dim),
                                        [&](Generator& gen) -> std::unique_ptr<Module> {
                                          auto whole = std::make_unique<Linear>(c.dim, c.vocab, gen,
                                                                                /*bias=*/false);
                                          if (tp_ == nullptr) return whole;
                                          return tensor_parallel::shard(
                                              *whole, ParallelLinear::Split::Column, *tp_, sp_);
                                        }));
  } else if (!is_first()) {
    wte_ = &add_child("wte", drawn_at(c.seed, 0, wte_draws, token_table));  // the head's copy
  }
}

const ParamRef& GPTStage::table() const {
  if (tp_ != nullptr) return static_cast<const VocabParallelEmbedding*>(wte_)->weight();
  return static_cast<const TokenEmbedding*>(wte_)->weight();
}

const ParamRef* GPTStage::tied_table() const {
  if (!config_.tie_head || stages_ == 1 || wte_ == nullptr) return nullptr;
  return &table();
}

Tensor GPTStage::my_rows(const Tensor& x) const {
  const int64_t b = x.size(0), t = x.size(1), k = tp_size();
  GTL_CHECK(t % k == 0, "GPTStage " << stage_ << ": sequence parallelism cuts the " << t
                                    << " positions in " << k
                                    << " equal parts; choose a TP size dividing them");
  const int64_t rows = b * t / k, first = tp_->rank() * rows;
  Tensor mine = Tensor::empty({b, t / k, config_.dim}, x.dtype(), x.device());
  mine.reshape({rows, config_.dim})
      .copy_(x.reshape({b * t, config_.dim}).slice(first, first + rows));
  return mine;
}

Tensor GPTStage::all_rows(const Tensor& x) const {
  Tensor whole =
      Tensor::empty({x.size(0), x.size(1) * tp_size(), config_.dim}, x.dtype(), x.device());
  tp_->all_gather(x, whole);
  return whole;
}

// The head's GEMMs on the micro-batch's B*T rows (the input is ids [B, T] or x [B, T, D], or
// [B, T/k, D] under SP), on this rank's V/k rows of the table under TP.
ComputeCost GPTStage::forward_cost(const Shape& input_shape) const {
  if (!reads_table()) return {};
  const int64_t cut = sp_ && !is_first() ? tp_size() : 1;
  return tied_head::forward_cost(input_shape.at(0) * input_shape.at(1) * cut, config_.dim,
                                 config_.vocab / tp_size());
}

ComputeCost GPTStage::backward_cost(const Shape& input_shape) const {
  if (!reads_table()) return {};
  const int64_t cut = sp_ && !is_first() ? tp_size() : 1;
  return tied_head::backward_cost(input_shape.at(0) * input_shape.at(1) * cut, config_.dim,
                                  config_.vocab / tp_size());
}

Tensor GPTStage::forward_impl(const Tensor& input, Context& ctx) {
  const GPTConfig& c = config_;
  if (is_first()) {
    GTL_CHECK(input.dim() == 2 && input.size(1) <= c.context && input.dtype() == DType::Int64,
              "GPTStage " << stage_ << ": expected ids [B, T] int64 with T <= context " << c.context
                          << ", got " << shape_str(input.shape()));
  } else {
    const int64_t cut = sp_ ? tp_size() : 1;  // under SP the rank's rows: [B, T/k, D]
    GTL_CHECK(input.dim() == 3 && input.size(1) * cut <= c.context && input.size(2) == c.dim &&
                  input.dtype() == DType::Float32,
              "GPTStage " << stage_ << ": expected the previous stage's x [B, T"
                          << (sp_ ? "/k" : "") << ", " << c.dim << "] float32 with T <= context "
                          << c.context << ", got " << shape_str(input.shape()));
  }
  ctx.children.resize(children_.size());
  std::size_t i = 0;
  Tensor x = input;
  if (is_first()) {
    x = wte_->forward(x, ctx.children[i++]);
    x = wpe_->forward(x, ctx.children[i++]);
    if (sp_) x = my_rows(x);
  }
  for (Module* block : blocks_) x = block->forward(x, ctx.children[i++]);
  if (!is_last()) return x;
  const int64_t b = x.size(0), rows = x.size(1);
  Tensor h = ln_f_->forward(x, ctx.children[i++]);
  if (head_ != nullptr) return head_->forward(h.reshape({b * rows, c.dim}), ctx.children[i]);
  if (sp_) h = all_rows(h);  // the head reads every token
  return tied_head::forward(h.reshape({h.size(0) * h.size(1), c.dim}), table(), ctx);
}

Tensor GPTStage::backward_impl(Context& ctx, const Tensor& dy, GradMode mode) {
  // The stream's [B, rows, D]: rows = T, or T/k under SP (a non-first stage's input has them).
  const int64_t b = ctx.input_shape[0],
                rows = ctx.input_shape[1] / (sp_ && is_first() ? tp_size() : 1);
  const std::size_t blocks_from = is_first() ? 2 : 0;
  Tensor dh;  // the last stage: the head's dx, held through the blocks' backward as in GPT
  Tensor d = dy;
  if (is_last()) {
    const std::size_t ln_f = blocks_from + blocks_.size();
    if (head_ != nullptr) {
      dh = head_->backward(ctx.children[ln_f + 1], dy, mode);
    } else {
      // The head's part of the table's gradient, with the caller's mode (with one stage, the
      // embedding's scatter-add is accumulated onto it below, as in GPT).
      dh = tied_head::backward(ctx, dy, table(), mode, &Module::write_grad);
      if (sp_) {  // each rank's rows' share of dh, summed: this rank's tokens only
        Tensor mine = Tensor::empty({b * rows, config_.dim}, dh.dtype(), dh.device());
        tp_->reduce_scatter(dh, mine);
        dh = mine;
      } else if (tp_ != nullptr) {
        tp_->all_reduce(dh);
      }
    }
    d = cast_to(dh, DType::Float32).reshape({b, rows, config_.dim});
    d = ln_f_->backward(ctx.children[ln_f], d, mode);
  }
  for (std::size_t k = blocks_.size(); k-- > 0;) {
    d = blocks_[k]->backward(ctx.children[blocks_from + k], d, mode);
  }
  if (!is_first()) return d;
  if (sp_) d = all_rows(d);
  d = wpe_->backward(ctx.children[1], d, mode);
  // With one stage and a tied head the table's gradient already holds the head's part.
  wte_->backward(ctx.children[0], d, reads_table() ? GradMode::Accumulate : mode);
  return Tensor();  // the ids have no gradient
}

}  // namespace gtl::nn
