// The demo's MLP and CNN classifiers (see models.h).
#include "gtl/nn/models.h"

#include <algorithm>
#include <functional>
#include <type_traits>

#include "gtl/nn/activation.h"
#include "gtl/nn/activation_checkpoint.h"
#include "gtl/nn/conv2d.h"
#include "gtl/nn/flatten.h"
#include "gtl/nn/gpt.h"
#include "gtl/nn/layernorm.h"
#include "gtl/nn/linear.h"
#include "gtl/nn/max_pool2d.h"
#include "gtl/nn/residual_mlp.h"

namespace gtl::nn {

namespace {

// One top-level layer of a model: how to build it and how many Philox counters its constructor
// draws (it must draw exactly that many: make_stage checks it).
struct LayerPlan {
  std::function<std::unique_ptr<Module>(Generator&)> build;
  uint64_t draws = 0;
};

uint64_t linear_draws(int64_t in, int64_t out) {
  return static_cast<uint64_t>(in * out + out);
}
uint64_t conv_draws(int64_t in, int64_t out, int64_t k) {
  return static_cast<uint64_t>(out * in * k * k + out);
}

template <typename M, typename... Args>
LayerPlan layer(uint64_t draws, Args... args) {
  return {[=](Generator& gen) -> std::unique_ptr<Module> {
            if constexpr (std::is_constructible_v<M, Args..., Generator&>) {
              return std::make_unique<M>(args..., gen);
            } else {
              return std::make_unique<M>(args...);
            }
          },
          draws};
}

std::vector<LayerPlan> plan_mlp(const ModelConfig& c) {
  const int64_t in = shape_numel(c.input), d = c.hidden;
  std::vector<LayerPlan> plan;
  plan.push_back(layer<Flatten>(0));
  plan.push_back(
      {[=](Generator& gen) { return std::make_unique<Linear>(in, d, gen); }, linear_draws(in, d)});
  for (int64_t b = 0; b < c.blocks; ++b) {
    const bool checkpointed = is_checkpointed(c, b);
    plan.push_back({[=](Generator& gen) -> std::unique_ptr<Module> {
                      auto block = std::make_unique<ResidualMLP>(d, gen);
                      if (checkpointed)
                        return std::make_unique<ActivationCheckpoint>(std::move(block));
                      return block;
                    },
                    linear_draws(d, 4 * d) + linear_draws(4 * d, d)});
  }
  plan.push_back(layer<LayerNorm>(0, d));
  plan.push_back({[=](Generator& gen) { return std::make_unique<Linear>(d, c.classes, gen); },
                  linear_draws(d, c.classes)});
  return plan;
}

std::vector<LayerPlan> plan_cnn(const ModelConfig& c) {
  GTL_CHECK(c.input.size() == 3 && c.input[1] % 4 == 0 && c.input[2] % 4 == 0,
            "make_model(cnn): expected an input [C, H, W] with H and W multiples of 4, got "
                << shape_str(c.input));
  GTL_CHECK(!c.checkpoint && c.checkpoint_blocks.empty(),
            "make_model(cnn): checkpointing is defined for the mlp's residual blocks only");
  const int64_t ch = c.hidden, flat = 2 * ch * (c.input[1] / 4) * (c.input[2] / 4);
  auto conv = [](int64_t in, int64_t out) {
    return LayerPlan{
        [=](Generator& gen) { return std::make_unique<Conv2d>(in, out, 3, gen, 1, 1); },
        conv_draws(in, out, 3)};
  };
  std::vector<LayerPlan> plan;
  plan.push_back(conv(c.input[0], ch));
  plan.push_back(layer<ReLU>(0));
  plan.push_back(layer<MaxPool2d>(0, int64_t{2}));
  plan.push_back(conv(ch, 2 * ch));
  plan.push_back(layer<ReLU>(0));
  plan.push_back(layer<MaxPool2d>(0, int64_t{2}));
  plan.push_back(layer<Flatten>(0));
  plan.push_back({[=](Generator& gen) { return std::make_unique<Linear>(flat, c.classes, gen); },
                  linear_draws(flat, c.classes)});
  return plan;
}

// The GPT is one top-level layer (its head may be tied to its first layer, so it is not split
// into stages); it draws from its own Philox(seed) stream, none from the plan's.
std::vector<LayerPlan> plan_gpt(const ModelConfig& c) {
  GPTConfig g;
  g.vocab = c.classes;
  g.context = c.context > 0 ? c.context : (c.input.empty() ? 0 : c.input[0] - 1);
  g.dim = c.hidden;
  g.layers = c.blocks;
  g.heads = c.heads;
  g.tie_head = c.tie_head;
  g.checkpoint = c.checkpoint;
  g.checkpoint_blocks = c.checkpoint_blocks;
  g.seed = c.seed;
  return {{[=](Generator&) -> std::unique_ptr<Module> { return std::make_unique<GPT>(g); }, 0}};
}

std::vector<LayerPlan> plan_model(const ModelConfig& c) {
  GTL_CHECK(c.hidden > 0 && c.blocks >= 0 && c.classes > 0,
            "make_model: hidden, classes must be positive and blocks >= 0, got hidden "
                << c.hidden << ", blocks " << c.blocks << ", classes " << c.classes);
  for (int64_t b : c.checkpoint_blocks) {
    GTL_CHECK(b >= 0 && b < c.blocks, "make_model: checkpoint_blocks lists block "
                                          << b << ", but the model has " << c.blocks
                                          << " residual blocks (0-based)");
  }
  if (c.kind == "mlp") return plan_mlp(c);
  if (c.kind == "cnn") return plan_cnn(c);
  if (c.kind == "gpt") return plan_gpt(c);
  throw Error("make_model: unknown model '" + c.kind + "': expected mlp, cnn or gpt");
}

}  // namespace

bool is_checkpointed(const ModelConfig& config, int64_t block) {
  return config.checkpoint ||
         std::find(config.checkpoint_blocks.begin(), config.checkpoint_blocks.end(), block) !=
             config.checkpoint_blocks.end();
}

int64_t num_layers(const ModelConfig& config) {
  return static_cast<int64_t>(plan_model(config).size());
}

std::unique_ptr<Sequential> make_stage(const ModelConfig& config, int64_t begin, int64_t end) {
  const std::vector<LayerPlan> plan = plan_model(config);
  const int64_t n = static_cast<int64_t>(plan.size());
  GTL_CHECK(0 <= begin && begin < end && end <= n,
            "make_stage: expected 0 <= begin < end <= " << n << " (the model's layers), got ["
                                                        << begin << ", " << end << ")");
  uint64_t offset = 0;  // the first Philox counter of layer i: the draws of layers 0..i-1
  for (int64_t i = 0; i < begin; ++i) offset += plan[static_cast<std::size_t>(i)].draws;
  auto stage = std::make_unique<Sequential>();
  for (int64_t i = begin; i < end; ++i) {
    const LayerPlan& p = plan[static_cast<std::size_t>(i)];
    Generator gen(config.seed);
    gen.set_offset(offset);
    std::unique_ptr<Module> built = p.build(gen);
    GTL_CHECK(gen.offset() == offset + p.draws,
              "make_stage: layer " << i << " (" << built->kind() << ") drew "
                                   << gen.offset() - offset << " random numbers, its plan says "
                                   << p.draws << "; fix the count in models.cpp");
    offset += p.draws;
    stage->add(std::move(built), std::to_string(i));
  }
  return stage;
}

std::unique_ptr<Sequential> make_model(const ModelConfig& config) {
  return make_stage(config, 0, num_layers(config));
}

}  // namespace gtl::nn
