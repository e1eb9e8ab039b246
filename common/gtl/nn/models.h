// The two classifiers of the demo and the benchmarks, built from the layers of this folder.
//
//   mlp:  Flatten -> Linear(in, D) -> blocks x ResidualMLP(D) -> LayerNorm -> Linear(D, classes)
//   gpt:  one GPT (gpt.h): hidden = D, blocks = layers, classes = vocab, heads, context
//   cnn:  Conv(3x3, c) -> ReLU -> MaxPool2 -> Conv(3x3, 2c) -> ReLU -> MaxPool2 -> Flatten
//         -> Linear(2c * H/4 * W/4, classes)
// The cross-entropy head (cross_entropy.h) sits after the last Linear. Residual block b of the MLP
// is wrapped in ActivationCheckpoint (its activations are recomputed in backward) when `checkpoint`
// is set (all blocks) or b is listed in `checkpoint_blocks` (any subset).
//
// Weights are drawn on the CPU from Philox(seed), so a CPU and a GPU model built with the same
// seed start identical (move them with ParameterBuffer). Each top-level layer draws from its own
// range of Philox counters, starting where the layers before it in the whole model end (the
// counts come from the layer sizes, without building those layers). A layer's initial weights
// therefore do not depend on which other layers were built:
//
//   make_stage(config, 2, 5)   the pipeline stage of layers 2, 3, 4 of the whole model: it
//                              allocates only those layers' parameters, holds bitwise the same
//                              initial weights as make_model(config)'s layers 2..4, and names them
//                              alike ("2.ln.weight": layers keep their index in the whole model)
//   make_model(config)         = make_stage(config, 0, num_layers(config))
//
// Running the stages of a split one after the other gives bitwise the forward and the gradients
// of the whole model: the layers are the same and nothing crosses a layer boundary but the
// activation (pipeline parallelism sends exactly that between ranks).
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "gtl/nn/sequential.h"

namespace gtl::nn {

struct ModelConfig {
  std::string kind = "mlp";   // "mlp", "cnn" or "gpt"
  Shape input = {1, 28, 28};  // one sample's shape (channels, height, width)
  int64_t classes = 10;
  int64_t hidden = 64;      // mlp: residual stream width D; cnn: channels c of the first conv
  int64_t blocks = 2;       // mlp: residual blocks
  bool checkpoint = false;  // mlp: checkpoint every residual block
  std::vector<int64_t> checkpoint_blocks;  // mlp: checkpoint these residual blocks (0-based)
  int64_t heads = 4;                       // gpt: attention heads
  int64_t context = 0;   // gpt: positions; 0 = the data's sequence length (input[0] - 1)
  bool tie_head = true;  // gpt: head tied to the token embedding
  uint64_t seed = 0;
};

// The whole model.
std::unique_ptr<Sequential> make_model(const ModelConfig& config);
// The number of top-level layers of the model (mlp: blocks + 4; cnn: 8; gpt: 1, the GPT).
int64_t num_layers(const ModelConfig& config);
// Layers [begin, end) of the model, 0 <= begin < end <= num_layers(config).
std::unique_ptr<Sequential> make_stage(const ModelConfig& config, int64_t begin, int64_t end);
// Whether residual block `block` of the mlp is checkpointed under `config`.
bool is_checkpointed(const ModelConfig& config, int64_t block);

}  // namespace gtl::nn
