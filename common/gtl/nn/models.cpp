// The demo's MLP and CNN classifiers (see models.h).
#include "gtl/nn/models.h"

#include "gtl/nn/activation.h"
#include "gtl/nn/checkpointed.h"
#include "gtl/nn/conv2d.h"
#include "gtl/nn/flatten.h"
#include "gtl/nn/layernorm.h"
#include "gtl/nn/linear.h"
#include "gtl/nn/max_pool2d.h"
#include "gtl/nn/residual_mlp.h"

namespace gtl::nn {

namespace {

std::unique_ptr<Sequential> make_mlp(const ModelConfig& c, Generator& gen) {
  auto model = std::make_unique<Sequential>();
  model->add(std::make_unique<Flatten>());
  model->add(std::make_unique<Linear>(shape_numel(c.input), c.hidden, gen));
  for (int64_t b = 0; b < c.blocks; ++b) {
    auto block = std::make_unique<ResidualMLP>(c.hidden, gen);
    if (c.checkpoint) {
      model->add(std::make_unique<Checkpointed>(std::move(block)));
    } else {
      model->add(std::move(block));
    }
  }
  model->add(std::make_unique<LayerNorm>(c.hidden));
  model->add(std::make_unique<Linear>(c.hidden, c.classes, gen));
  return model;
}

std::unique_ptr<Sequential> make_cnn(const ModelConfig& c, Generator& gen) {
  GTL_CHECK(c.input.size() == 3 && c.input[1] % 4 == 0 && c.input[2] % 4 == 0,
            "make_model(cnn): expected an input [C, H, W] with H and W multiples of 4, got "
                << shape_str(c.input));
  auto model = std::make_unique<Sequential>();
  model->add(std::make_unique<Conv2d>(c.input[0], c.hidden, 3, gen, 1, 1));
  model->add(std::make_unique<ReLU>());
  model->add(std::make_unique<MaxPool2d>(2));
  model->add(std::make_unique<Conv2d>(c.hidden, 2 * c.hidden, 3, gen, 1, 1));
  model->add(std::make_unique<ReLU>());
  model->add(std::make_unique<MaxPool2d>(2));
  model->add(std::make_unique<Flatten>());
  model->add(
      std::make_unique<Linear>(2 * c.hidden * (c.input[1] / 4) * (c.input[2] / 4), c.classes, gen));
  return model;
}

}  // namespace

std::unique_ptr<Sequential> make_model(const ModelConfig& config) {
  GTL_CHECK(config.hidden > 0 && config.blocks >= 0 && config.classes > 0,
            "make_model: hidden, classes must be positive and blocks >= 0, got hidden "
                << config.hidden << ", blocks " << config.blocks << ", classes " << config.classes);
  Generator gen(config.seed);
  if (config.kind == "mlp") return make_mlp(config, gen);
  if (config.kind == "cnn") return make_cnn(config, gen);
  throw Error("make_model: unknown model '" + config.kind + "': expected mlp or cnn");
}

}  // namespace gtl::nn
