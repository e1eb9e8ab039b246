// The two classifiers of the demo and the benchmarks, built from the layers of this folder.
//
//   mlp:  Flatten -> Linear(in, D) -> blocks x ResidualMLP(D) -> LayerNorm -> Linear(D, classes)
//   cnn:  Conv(3x3, c) -> ReLU -> MaxPool2 -> Conv(3x3, 2c) -> ReLU -> MaxPool2 -> Flatten
//         -> Linear(2c * H/4 * W/4, classes)
// The cross-entropy head (cross_entropy.h) sits after the last Linear. With `checkpoint`, each
// residual block of the MLP is wrapped in Checkpointed (its activations are recomputed in
// backward). Weights are drawn on the CPU from Philox(seed), so a CPU and a GPU model built with
// the same seed start identical (move them with ParameterBuffer).
#pragma once

#include <memory>
#include <string>

#include "gtl/nn/sequential.h"

namespace gtl::nn {

struct ModelConfig {
  std::string kind = "mlp";   // "mlp" or "cnn"
  Shape input = {1, 28, 28};  // one sample's shape (channels, height, width)
  int64_t classes = 10;
  int64_t hidden = 64;      // mlp: residual stream width D; cnn: channels c of the first conv
  int64_t blocks = 2;       // mlp: residual blocks
  bool checkpoint = false;  // mlp: checkpoint every residual block
  uint64_t seed = 0;
};

std::unique_ptr<Sequential> make_model(const ModelConfig& config);

}  // namespace gtl::nn
