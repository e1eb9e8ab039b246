// Lab 03, TODO 7: the capstone, CPU vs GPU vs GPU+AMP on the lab's digit classifier.
//
// Each row trains the same model from the same seed on the same batches; only the device and the
// precision change. Time per epoch is the mean step time times the batches of an epoch (the
// evaluation is not timed), peak memory is the peak of the TRAINING THREAD's own allocations over
// the steps, and accuracy is measured after the last step.
//
// Why the training thread only: the trainer's data loader prepares batches on a background
// thread, charged to the allocator that was current when the loader was built. How many
// prefetched batches are alive at the peak moment depends on thread timing, so a peak that
// includes them differs from run to run. On the CPU the row's peak is the bytes building the
// trainer left allocated (weights, gradients, AdamW state) plus the steps' own peak (activations
// and the transients of backward), the same on every run and every machine for a fixed
// GTL_BLAS_THREADS; how to measure it is step 7's question. A GPU row reads the device
// allocator's peak over the steps (reset after the build), which includes the batches the loader
// copies to the device.
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
  // SOLUTION(lab03) step 7
  if (device.is_cuda() && !gtl::cuda_available()) {
    row.skipped = true;
    row.skip_reason = gtl::cuda_unavailable_reason();  // the table prints "skipped: " + it
    return row;
  }
  const Data data = load_data(options);
  gtl::train::TrainerOptions to;
  to.model = options.model;
  to.device = device;
  to.precision = gtl::nn::PrecisionPolicy::parse(precision);
  to.batch_size = options.batch_size;
  // Built under its own allocator: the loader keeps it for the batches its thread allocates.
  const std::shared_ptr<gtl::Allocator> built = gtl::make_cpu_allocator();
  std::unique_ptr<gtl::train::Trainer> trainer;
  {
    const gtl::AllocatorScope scope(built);
    trainer = std::make_unique<gtl::train::Trainer>(to, data.train);
  }
  const int64_t state_bytes = built->stats().allocated_bytes;  // the loader has not started yet
  // The steps under another: only this thread's allocations are charged to it.
  const std::shared_ptr<gtl::Allocator> steps = gtl::make_cpu_allocator();
  const gtl::AllocatorScope scope(steps);
  const std::shared_ptr<gtl::Allocator> gpu =
      device.is_cuda() ? gtl::current_allocator(device) : nullptr;
  if (gpu) gpu->reset_peak_stats();
  const auto start = std::chrono::steady_clock::now();
  for (int64_t s = 0; s < options.steps; ++s) {
    const gtl::train::StepStats stats = trainer->step();
    row.final_loss = stats.loss;
    if (!stats.stepped) ++row.skipped_steps;
  }
  const double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  row.peak_bytes =
      gpu ? gpu->stats().peak_allocated_bytes : state_bytes + steps->stats().peak_allocated_bytes;
  row.seconds_per_epoch = seconds / static_cast<double>(options.steps) *
                          static_cast<double>(trainer->batches_per_epoch());
  row.accuracy = trainer->evaluate(*data.test, options.eval_samples).accuracy;
  // END SOLUTION(lab03)
  return row;
}

// Given: the four rows of the table, and each row's speedup over the CPU row.
std::vector<CapstoneRow> run_capstone(const CapstoneOptions& options) {
  const gtl::Device gpu = gtl::Device::cuda(0);
  std::vector<CapstoneRow> rows;
  rows.push_back(run_capstone_row("CPU FP32", gtl::Device::cpu(), "fp32", options));
  rows.push_back(run_capstone_row("GPU FP32", gpu, "fp32", options));
  rows.push_back(run_capstone_row("GPU FP16", gpu, "fp16", options));
  rows.push_back(run_capstone_row("GPU BF16", gpu, "bf16", options));
  const double cpu = rows[0].seconds_per_epoch;
  for (CapstoneRow& r : rows) {
    if (!r.skipped && r.seconds_per_epoch > 0) r.speedup_vs_cpu = cpu / r.seconds_per_epoch;
  }
  return rows;
}

}  // namespace lab03
