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
  // TODO(lab03) step 7
  // Spec (Capstone.*, CapstoneGpu.*): a GPU row without a GPU is skipped, with skip_reason =
  // gtl::cuda_unavailable_reason() (the table prints "skipped: " before it). Otherwise train a
  // gtl::train::Trainer (model, device, PrecisionPolicy::parse(precision), batch size) on
  // load_data(options).train for options.steps steps, then fill every other field of CapstoneRow
  // (gtl/train/trainer.h: what a step and an evaluation on options.eval_samples test samples
  // return). On the CPU, peak_bytes = the bytes building the trainer left allocated + the peak of
  // what the steps allocate on this thread, exact on every run (the test leaves a 64 MiB peak in
  // the default allocator just before it calls you); on a GPU, the device allocator's peak over the
  // steps (gtl::current_allocator(device)).
  // Decide how to measure that CPU peak when the data loader allocates its batches on a
  // background thread, from the allocator current when it was built (gtl/memory/allocator.h).
  // Stuck? The handout's collapsed section for 7. About 35 lines.
  (void)options;
  throw gtl::Error("TODO(lab03) step 7: run_capstone_row(" + name + ") is not implemented");
  // END TODO(lab03)
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
