// Lab 03, TODO 7: the capstone, CPU vs GPU vs GPU+AMP on the lab's digit classifier.
//
// Each row trains the same model from the same seed on the same batches; only the device and the
// precision change. Time per epoch is the mean step time times the batches of an epoch (the
// evaluation is not timed), peak memory is the device allocator's peak over the training steps
// (reset after the model is built, so it counts the step: weights, gradients, AdamW state, the
// compute copy and the activations), and accuracy is measured after the last step.
#include <chrono>
#include <memory>

#include "gtl/data/idx_reader.h"
#include "gtl/data/synthetic_digits.h"
#include "gtl/memory/allocator.h"
#include "gtl/train/trainer.h"
#include "mixed_precision.h"

namespace lab03 {

namespace {
struct Data {
  std::shared_ptr<const gtl::data::Dataset> train, test;
};

[[maybe_unused]] Data load_data(const CapstoneOptions& o) {
  namespace data = gtl::data;
  if (o.idx_dir.empty()) {
    return {std::make_shared<data::SyntheticDigits>(o.train_size, data::Split::Train),
            std::make_shared<data::SyntheticDigits>(o.eval_samples, data::Split::Test)};
  }
  return {std::make_shared<data::IdxDataset>(o.idx_dir + "/train-images-idx3-ubyte",
                                             o.idx_dir + "/train-labels-idx1-ubyte"),
          std::make_shared<data::IdxDataset>(o.idx_dir + "/t10k-images-idx3-ubyte",
                                             o.idx_dir + "/t10k-labels-idx1-ubyte")};
}
}  // namespace

CapstoneRow run_capstone_row(const std::string& name, gtl::Device device,
                             const std::string& precision, const CapstoneOptions& options) {
  CapstoneRow row;
  row.name = name;
  row.device = device.str();
  row.precision = precision;
  // TODO(lab03) step 7a
  if (device.is_cuda() && !gtl::cuda_available()) {
    row.skipped = true;
    row.skip_reason = "no GPU on this machine: " + gtl::cuda_unavailable_reason();
    return row;
  }
  const Data data = load_data(options);
  gtl::train::TrainerOptions to;
  to.model = options.model;
  to.device = device;
  to.precision = gtl::nn::PrecisionPolicy::parse(precision);
  to.batch_size = options.batch_size;
  gtl::train::Trainer trainer(to, data.train);
  std::shared_ptr<gtl::Allocator> allocator = gtl::current_allocator(device);
  allocator->reset_peak_stats();
  const auto start = std::chrono::steady_clock::now();
  for (int64_t s = 0; s < options.steps; ++s) {
    const gtl::train::StepStats stats = trainer.step();
    row.final_loss = stats.loss;
    if (!stats.stepped) ++row.skipped_steps;
  }
  const double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  row.peak_bytes = allocator->stats().peak_allocated_bytes;
  row.seconds_per_epoch = seconds / static_cast<double>(options.steps) *
                          static_cast<double>(trainer.batches_per_epoch());
  row.accuracy = trainer.evaluate(*data.test, options.eval_samples).accuracy;
  // END TODO(lab03)
  return row;
}

std::vector<CapstoneRow> run_capstone(const CapstoneOptions& options) {
  std::vector<CapstoneRow> rows;
  // TODO(lab03) step 7b
  const gtl::Device gpu = gtl::Device::cuda(0);
  rows.push_back(run_capstone_row("CPU FP32", gtl::Device::cpu(), "fp32", options));
  rows.push_back(run_capstone_row("GPU FP32", gpu, "fp32", options));
  rows.push_back(run_capstone_row("GPU FP16+scaler", gpu, "fp16", options));
  rows.push_back(run_capstone_row("GPU BF16", gpu, "bf16", options));
  const double cpu = rows[0].seconds_per_epoch;
  for (CapstoneRow& r : rows) {
    if (!r.skipped && r.seconds_per_epoch > 0) r.speedup_vs_cpu = cpu / r.seconds_per_epoch;
  }
  // END TODO(lab03)
  return rows;
}

}  // namespace lab03
