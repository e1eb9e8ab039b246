// Lab 04, TODO 1: the memory calculator against the allocator's exact statistics.
#include <gtest/gtest.h>

#include <cmath>

#include "gtl_judge_output.h"
#include "memory_lab.h"

namespace {

using gtl::Tensor;

// What the CPU allocator measures for one float32 step of `config` at `batch`, term by term.
struct Measured {
  int64_t persistent = 0;  // model (weights + gradients) and AdamW state
  int64_t batch = 0;
  int64_t activations = 0;  // held between forward and backward, logits included
  int64_t peak = 0;         // peak allocated bytes of the whole step
};

Measured measure_step(const lab04::ModelConfig& config, int64_t batch) {
  const std::shared_ptr<gtl::Allocator> allocator = gtl::make_cpu_allocator();
  const gtl::AllocatorScope scope(allocator);
  auto model = gtl::nn::make_model(config);
  gtl::optim::AdamW adamw(model->parameters());
  Measured m;
  m.persistent = allocator->stats().allocated_bytes;
  const lab04::LabBatch b = lab04::make_batch(config, batch);
  m.batch = allocator->stats().allocated_bytes - m.persistent;
  allocator->reset_peak_stats();
  const gtl::nn::CrossEntropyLoss head;
  gtl::nn::Context ctx, loss_ctx;
  const Tensor logits = model->forward(b.images, ctx);
  m.activations = allocator->stats().allocated_bytes - m.persistent - m.batch;
  head.forward(logits, b.labels, loss_ctx);
  model->backward(ctx, head.backward(loss_ctx));
  adamw.step();
  m.peak = allocator->stats().peak_allocated_bytes;
  return m;
}

TEST(MemoryCalculator, CountsEveryParameterOfTheLabModel) {
  gtl::judge::Outputs recorded("MemoryCalculator.CountsEveryParameterOfTheLabModel");
  for (int64_t blocks : {1, 2, 4}) {
    lab04::ModelConfig config;
    config.blocks = blocks;
    const int64_t expected = gtl::nn::make_model(config)->num_parameters();
    recorded.record(lab04::count_parameters(config));
    EXPECT_EQ(lab04::count_parameters(config), expected)
        << "TODO 1: " << blocks << " blocks: Linear(784, 64) + blocks x (LayerNorm, fc1 64->256, "
        << "fc2 256->64) + LayerNorm + Linear(64, 10), weights AND biases (LayerNorm: gamma and "
        << "beta)";
  }
}

TEST(MemoryCalculator, PersistentBytesAreExact) {
  lab04::ModelConfig config;
  const lab04::MemoryEstimate e = lab04::estimate_step_memory(config, 64);
  gtl::judge::Outputs("MemoryCalculator.PersistentBytesAreExact")
      .record_all(std::vector<int64_t>{e.weights, e.gradients, e.optimizer_state, e.batch});
  const Measured m = measure_step(config, 64);
  const int64_t p = 4 * gtl::nn::make_model(config)->num_parameters();
  EXPECT_EQ(e.weights, p) << "TODO 1: float32 weights, 4 bytes per parameter";
  EXPECT_EQ(e.gradients, p) << "TODO 1: one float32 gradient per parameter";
  EXPECT_EQ(e.optimizer_state, 2 * p)
      << "TODO 1: AdamW keeps TWO float32 moments (exp_avg, exp_avg_sq) per parameter";
  EXPECT_EQ(e.persistent(), m.persistent) << "TODO 1: model + AdamW as the allocator counts them";
  EXPECT_EQ(e.batch, m.batch) << "TODO 1: images (float32) and labels (int64) of 64 samples";
}

TEST(MemoryCalculator, ActivationBytesAreExactAcrossBatchAndDepth) {
  gtl::judge::Outputs recorded("MemoryCalculator.ActivationBytesAreExactAcrossBatchAndDepth");
  for (int64_t blocks : {1, 2, 4}) {
    for (int64_t batch : {1, 16, 64, 256}) {
      lab04::ModelConfig config;
      config.blocks = blocks;
      const Measured m = measure_step(config, batch);
      recorded.record(lab04::estimate_step_memory(config, batch).activations);
      EXPECT_EQ(lab04::estimate_step_memory(config, batch).activations, m.activations)
          << "TODO 1: " << blocks << " blocks, batch " << batch
          << ": bytes held between forward and backward. Per sample: each block saves (10D + 2) "
             "floats, the head (2D + 2) + D + classes; the first Linear's input is the batch "
             "itself (a view: no new bytes). Activations scale with the batch, not the model.";
    }
  }
}

TEST(MemoryCalculator, PeakWithinTwoPercentOfTheMeasuredPeak) {
  gtl::judge::Outputs recorded("MemoryCalculator.PeakWithinTwoPercentOfTheMeasuredPeak");
  // D = 32 with one block: the peak moves from the head to the first Linear's backward.
  for (int64_t hidden : {32, 64}) {
    for (int64_t blocks : {1, 2, 4}) {
      for (int64_t batch : {1, 16, 64, 256, 1024}) {
        lab04::ModelConfig config;
        config.hidden = hidden;
        config.blocks = blocks;
        const Measured m = measure_step(config, batch);
        const int64_t predicted = lab04::estimate_step_memory(config, batch).peak;
        recorded.record(predicted);
        const double error = std::abs(double(predicted - m.peak)) / double(m.peak);
        EXPECT_LE(error, 0.02)
            << "TODO 1: D = " << hidden << ", " << blocks << " blocks, batch " << batch
            << ": predicted peak " << predicted << " bytes, measured " << m.peak << " (error "
            << 100 * error
            << "%). Peak = persistent + batch + the larger of two moments of backward: the "
               "head's (all activations held) and the first Linear's (handout, 'Where the peak "
               "is')";
      }
    }
  }
}

}  // namespace
