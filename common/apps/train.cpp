// train: the training core's demo. Trains a digit classifier and prints, per epoch, the loss,
// the test accuracy and the throughput; --compare prints CPU vs GPU FP32 vs GPU bf16 side by side.
//
//   train                                   # MLP on synthetic digits, CPU, fp32
//   train --device cuda --precision bf16 --epochs 2
//   train --steps 300 --save ckpt.bin && train --steps 600 --resume ckpt.bin
//   train --compare --steps 300
//   train --profile 5 --trace step.json        # where a step's time goes, layer by layer
//
// Every error (a bad option, --device cuda without a GPU, a missing IDX file) prints a message
// and exits with a nonzero status (1, or CLI11's code for a bad option); nothing may crash.
#include <CLI/CLI.hpp>

#include <chrono>
#include <cstdio>
#include <iostream>
#include <memory>
#include <string>
#include <vector>

#include "gtl/data/byte_tokenizer.h"
#include "gtl/data/corpus.h"
#include "gtl/data/idx_reader.h"
#include "gtl/data/synthetic_digits.h"
#include "gtl/data/text_dataset.h"
#include "gtl/nn/generate.h"
#include "gtl/nn/gpt.h"
#include "gtl/nn/profiler.h"
#include "gtl/train/trainer.h"

using namespace gtl;

namespace {

// The figure measured on the 2-core CPU CI machine (docs/core.md); common/tests/train/demo_test.cpp
// checks it.
constexpr const char* kCpuFigure =
    "On the CPU the default MLP (width 64, 2 residual blocks, AdamW lr 2e-3, batch 64, fp32,\n"
    "seed 0) reaches >= 95% test accuracy on synthetic digits within 300 steps\n"
    "(common/tests/train/demo_test.cpp checks this figure on every CI run).";

// The GPT's figure, measured on the same 2-core machine (docs/core.md, "A small GPT"): 2.36 at
// step 300 in 16 s; demo_test.cpp checks it too.
constexpr const char* kGptFigure =
    "With --model gpt (2 layers, 4 heads, width 64, context 64, batch 16, lr 2e-3, seed 0) the\n"
    "validation loss on the embedded corpus falls below 2.5 nats per byte within 300 steps.";

struct Data {
  std::shared_ptr<const data::Dataset> train, test;
};

// The gpt's data: 90% of the text for training (every offset a window), the last 10% as
// disjoint validation windows.
Data load_text(const std::string& path, int64_t context) {
  const std::string text =
      path.empty() ? std::string(data::embedded_corpus()) : data::load_text_file(path);
  auto [train, val] = data::split_text(text, 0.9);
  return {std::make_shared<data::TextDataset>(train, context, 1),
          std::make_shared<data::TextDataset>(val, context, context)};
}

// Model FLOPs per token of one training step (forward + backward), derived in docs/core.md:
// 6 N for the weight GEMMs (N: every parameter a GEMM multiplies, i.e. all but the position
// table, LayerNorms and biases; the tied table counts once, for the head), plus attention's
// 12 L T D (S = q k^T and Y = P v cost 2 T D each per token and layer forward, twice that
// backward; the reference path computes the full T x T, masked half included).
double gpt_flops_per_token(const nn::ModelConfig& m, int64_t t) {
  const double d = static_cast<double>(m.hidden), l = static_cast<double>(m.blocks);
  const double v = static_cast<double>(m.classes);
  const double gemm_params =
      l * 12 * d * d + v * d * (m.tie_head ? 1 : 2) - (m.tie_head ? 0 : v * d);
  return 6 * gemm_params + 12 * l * static_cast<double>(t) * d;
}

Data load_data(const std::string& idx_dir, int64_t train_size, int64_t test_size) {
  if (idx_dir.empty()) {
    return {std::make_shared<data::SyntheticDigits>(train_size, data::Split::Train),
            std::make_shared<data::SyntheticDigits>(test_size, data::Split::Test)};
  }
  return {std::make_shared<data::IdxDataset>(idx_dir + "/train-images-idx3-ubyte",
                                             idx_dir + "/train-labels-idx1-ubyte"),
          std::make_shared<data::IdxDataset>(idx_dir + "/t10k-images-idx3-ubyte",
                                             idx_dir + "/t10k-labels-idx1-ubyte")};
}

struct RunResult {
  double seconds_per_epoch = 0, samples_per_second = 0;
  int64_t peak_bytes = 0;
  float accuracy = 0;
};

// Trains to `total_steps` (counting steps a resumed checkpoint already did), reporting per epoch.
struct GptDemo {
  int64_t generate = 0;  // tokens to sample after training
  nn::SamplingOptions sampling;
  double peak_tflops = 0;  // for the MFU figure; 0: the device's default below
};

RunResult run(train::TrainerOptions options, const Data& data, int64_t total_steps,
              int64_t eval_samples, const std::string& resume, const std::string& save,
              bool verbose, const GptDemo& gpt = {}) {
  std::shared_ptr<Allocator> allocator = current_allocator(options.device);
  train::Trainer trainer(options, data.train);
  if (!resume.empty()) {
    trainer.load(resume);
    if (verbose)
      std::printf("resumed from %s at step %lld\n", resume.c_str(),
                  static_cast<long long>(trainer.steps_done()));
  }
  if (verbose) {
    std::printf("%s model, %lld parameters on %s, %s; %s\n", options.model.kind.c_str(),
                static_cast<long long>(trainer.model().num_parameters()),
                options.device.str().c_str(), options.precision.name().c_str(),
                trainer.parameters().memory_report().c_str());
  }
  allocator->reset_peak_stats();
  const int64_t per_epoch = trainer.batches_per_epoch();
  using Clock = std::chrono::steady_clock;
  double train_seconds = 0;
  int64_t timed_steps = 0;
  float accuracy = 0;
  float loss_sum = 0;
  int64_t loss_count = 0;
  auto epoch_start = Clock::now();
  while (trainer.steps_done() < total_steps) {
    const train::StepStats s = trainer.step();
    loss_sum += s.loss;
    ++loss_count;
    const int64_t done = trainer.steps_done();
    if (verbose && (done % 10 == 0 || done == total_steps)) {
      std::fprintf(stderr, "\r  step %lld/%lld  loss %.4f  grad norm %.3f%s   ",
                   static_cast<long long>(done), static_cast<long long>(total_steps), s.loss,
                   s.grad_norm, s.stepped ? "" : "  (skipped: fp16 overflow)");
    }
    if (done % per_epoch == 0 || done == total_steps) {
      const double seconds = std::chrono::duration<double>(Clock::now() - epoch_start).count();
      train_seconds += seconds;
      timed_steps += loss_count;
      const train::EvalStats eval = trainer.evaluate(*data.test, eval_samples);
      accuracy = eval.accuracy;
      if (verbose) {
        std::fprintf(stderr, "\r%78s\r", "");
        std::printf(
            "epoch %lld (step %lld): train loss %.4f  test loss %.4f  test accuracy "
            "%.2f%%  %.1f s  %.0f samples/s  activations %s\n",
            static_cast<long long>((done - 1) / per_epoch + 1), static_cast<long long>(done),
            loss_sum / static_cast<float>(loss_count), eval.loss, 100.0 * eval.accuracy, seconds,
            static_cast<double>(loss_count * options.batch_size) / seconds,
            format_bytes(s.activation_bytes).c_str());
        std::fflush(stdout);
      }
      loss_sum = 0;
      loss_count = 0;
      epoch_start = Clock::now();
    }
  }
  if (!save.empty()) {
    trainer.save(save);
    if (verbose) std::printf("saved the training state to %s\n", save.c_str());
  }
  RunResult r;
  if (options.model.kind == "gpt" && timed_steps > 0 && verbose) {
    const int64_t t = data.train->sample_shape()[0] - 1;
    const double tokens_per_s =
        static_cast<double>(timed_steps * options.batch_size * t) / train_seconds;
    // Peak, the denominator MFU is defined against: one CPU core (the core's GEMMs use one BLAS
    // thread) with AVX2 FMA at 2.5 GHz is 2 x 8 x 2 x 2.5e9 = 80 GFLOP/s float32 (an assumption
    // about the CPU); on a GPU, NVIDIA's datasheet peaks for an H100 SXM: dense tensor cores 989
    // TFLOP/s (bf16/fp16), 495 (tf32), 67 float32 without tensor cores (not measured here).
    double peak = gpt.peak_tflops;
    if (peak <= 0) {
      const DType c = options.precision.compute;
      peak = !options.device.is_cuda() ? 0.08
             : c != DType::Float32     ? 989
             : options.precision.tf32  ? 495
                                       : 67;
    }
    const double flops = gpt_flops_per_token(trainer.options().model, t);
    std::printf(
        "model FLOPs per token %.3g (6N + 12LTD), %.0f tokens/s, %.3g TFLOP/s, MFU %.1f%% "
        "of %.3g TFLOP/s\n",
        flops, tokens_per_s, flops * tokens_per_s / 1e12,
        100.0 * flops * tokens_per_s / (peak * 1e12), peak);
  }
  if (options.model.kind == "gpt" && gpt.generate > 0 && verbose) {
    nn::PrecisionScope precision(options.precision);
    auto& model = static_cast<nn::GPT&>(*trainer.model().children().front());
    const std::vector<int64_t> out = nn::generate(model, data::ByteTokenizer::encode("Chapter"),
                                                  gpt.generate, gpt.sampling, options.device);
    std::printf("sample (temperature %.2f, top-k %lld, seed %llu):\n%s\n", gpt.sampling.temperature,
                static_cast<long long>(gpt.sampling.top_k),
                static_cast<unsigned long long>(gpt.sampling.seed),
                data::ByteTokenizer::decode(out).c_str());
  }
  if (timed_steps > 0) {
    const double per_step = train_seconds / static_cast<double>(timed_steps);
    r.seconds_per_epoch = per_step * static_cast<double>(per_epoch);
    r.samples_per_second = static_cast<double>(options.batch_size) / per_step;
  }
  r.peak_bytes = allocator->stats().peak_allocated_bytes;
  r.accuracy = accuracy;
  return r;
}

// --profile N: one warm-up step, then N profiled steps; prints the profiler's table (per layer
// kind and pass, by total time) and, with --trace, writes the Chrome trace of those steps.
void profile(const train::TrainerOptions& options, const Data& data, int64_t steps,
             const std::string& trace) {
  train::Trainer trainer(options, data.train);
  trainer.step();  // warm-up: first-use costs (allocator segments, library handles) stay out
  nn::Profiler profiler(trainer.model(), options.device);
  for (int64_t i = 0; i < steps; ++i) trainer.step();
  profiler.finish();
  std::printf("%lld profiled steps of batch %lld, %s model on %s (after one warm-up step)\n",
              static_cast<long long>(steps), static_cast<long long>(options.batch_size),
              options.model.kind.c_str(), options.device.str().c_str());
  std::printf("%s", profiler.table().c_str());
  if (options.device.is_cuda())
    std::printf("host us: time to launch each layer's kernels; device us: the GPU's own time\n");
  if (!trace.empty()) {
    profiler.write_chrome_trace(trace);
    std::printf("Chrome trace written to %s (open in ui.perfetto.dev or chrome://tracing)\n",
                trace.c_str());
  }
}

// CPU FP32, GPU FP32 and GPU bf16 with the same model, data and number of steps.
void compare(const train::TrainerOptions& base, const Data& data, int64_t steps,
             int64_t eval_samples) {
  struct Row {
    const char* name;
    Device device;
    nn::PrecisionPolicy precision;
  };
  const std::vector<Row> rows = {
      {"CPU FP32", Device::cpu(), nn::PrecisionPolicy::fp32()},
      {"GPU FP32", Device::cuda(0), nn::PrecisionPolicy::fp32()},
      {"GPU BF16 (mixed)", Device::cuda(0), nn::PrecisionPolicy::bf16()}};
  std::printf("%lld steps of batch %lld, %s model; time per epoch extrapolated to %lld samples\n",
              static_cast<long long>(steps), static_cast<long long>(base.batch_size),
              base.model.kind.c_str(), static_cast<long long>(data.train->size()));
  std::printf("| %-18s | %14s | %12s | %12s | %14s |\n", "run", "time/epoch (s)", "samples/s",
              "peak memory", "test accuracy");
  std::printf("|%s|%s|%s|%s|%s|\n", std::string(20, '-').c_str(), std::string(16, '-').c_str(),
              std::string(14, '-').c_str(), std::string(14, '-').c_str(),
              std::string(16, '-').c_str());
  std::string skipped_reason;
  for (const Row& row : rows) {
    if (row.device.is_cuda() && !cuda_available()) {
      // A full row keeps the Markdown table well-formed; the reason follows the table.
      std::printf("| %-18s | %14s | %12s | %12s | %14s |\n", row.name, "skipped", "-", "-", "-");
      skipped_reason = cuda_unavailable_reason();
      continue;
    }
    train::TrainerOptions o = base;
    o.device = row.device;
    o.precision = row.precision;
    const RunResult r = run(o, data, steps, eval_samples, "", "", false);
    std::printf("| %-18s | %14.2f | %12.0f | %12s | %13.2f%% |\n", row.name, r.seconds_per_epoch,
                r.samples_per_second, format_bytes(r.peak_bytes).c_str(), 100.0 * r.accuracy);
    std::fflush(stdout);
  }
  if (!skipped_reason.empty()) std::printf("\nGPU rows skipped: %s\n", skipped_reason.c_str());
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{std::string("Trains a digit classifier (or a small GPT) with the GPU Training "
                           "Labs core.\n") +
               kCpuFigure + "\n" + kGptFigure};
  train::TrainerOptions options;
  std::string device = "cpu", precision = "fp32", idx_dir, save, resume;
  int64_t steps = 0, epochs = 1, train_size = data::SyntheticDigits::kDefaultTrainSize;
  int64_t test_size = 2000;
  bool do_compare = false;
  app.add_option("--model", options.model.kind, "mlp (residual MLP), cnn or gpt")
      ->check(CLI::IsMember({"mlp", "cnn", "gpt"}))
      ->capture_default_str();
  app.add_option("--device", device, "cpu or cuda")
      ->check(CLI::IsMember({"cpu", "cuda"}))
      ->capture_default_str();
  app.add_option("--precision", precision, "fp32, tf32, fp16 (with loss scaling) or bf16")
      ->check(CLI::IsMember({"fp32", "tf32", "fp16", "bf16"}))
      ->capture_default_str();
  bool no_loss_scaling = false;
  app.add_flag("--no-loss-scaling", no_loss_scaling,
               "fp16 without its loss scaler (to see what the scaler is for)");
  app.add_option("--batch-size", options.batch_size, "samples per step")
      ->check(CLI::PositiveNumber)
      ->capture_default_str();
  auto* steps_opt = app.add_option("--steps", steps, "total optimizer steps (overrides --epochs)")
                        ->check(CLI::PositiveNumber);
  app.add_option("--epochs", epochs, "epochs over the training set")
      ->check(CLI::PositiveNumber)
      ->capture_default_str()
      ->excludes(steps_opt);
  app.add_option("--seed", options.seed, "data order seed (also seeds the weights)")
      ->capture_default_str();
  app.add_option("--lr", options.lr, "AdamW learning rate")->capture_default_str();
  auto* hidden_opt =
      app.add_option("--hidden", options.model.hidden, "mlp width (64) / cnn channels (16)")
          ->check(CLI::PositiveNumber);
  app.add_option("--blocks", options.model.blocks, "mlp residual blocks / gpt layers")
      ->capture_default_str();
  int64_t context = 64;
  std::string text_path;
  bool untied = false;
  GptDemo gpt;
  app.add_option("--heads", options.model.heads, "gpt attention heads")->capture_default_str();
  app.add_option("--context", context, "gpt context (sequence length)")->capture_default_str();
  app.add_option("--text", text_path, "gpt: a UTF-8 text file instead of the embedded corpus");
  app.add_flag("--untied-head", untied, "gpt: a separate output head instead of the tied one");
  app.add_option("--generate", gpt.generate, "gpt: tokens to sample after training");
  app.add_option("--temperature", gpt.sampling.temperature, "gpt sampling; 0 = greedy")
      ->capture_default_str();
  app.add_option("--top-k", gpt.sampling.top_k, "gpt sampling; 0 = all")->capture_default_str();
  app.add_option("--peak-tflops", gpt.peak_tflops, "gpt: peak for the MFU figure");
  app.add_flag("--checkpoint-activations", options.model.checkpoint,
               "recompute each residual block's activations in backward");
  app.add_option("--train-size", train_size, "synthetic training samples")
      ->check(CLI::PositiveNumber)
      ->capture_default_str();
  app.add_option("--test-size", test_size, "test samples evaluated after each epoch")
      ->check(CLI::PositiveNumber)
      ->capture_default_str();
  app.add_option("--idx-dir", idx_dir,
                 "folder with MNIST IDX files (train-images-idx3-ubyte, ...; gunzipped)");
  app.add_option("--save", save, "write the training state here at the end");
  app.add_option("--resume", resume, "continue from this checkpoint (same options)");
  app.add_flag("--compare", do_compare, "CPU FP32 vs GPU FP32 vs GPU BF16 table");
  int64_t profile_steps = 0;
  std::string trace_path;
  app.add_option("--profile", profile_steps,
                 "profile this many steps (after one warm-up step): a table per layer and pass")
      ->check(CLI::PositiveNumber);
  app.add_option("--trace", trace_path, "with --profile: write the Chrome trace here");
  CLI11_PARSE(app, argc, argv);

  try {
    options.device = Device::parse(device);
    options.precision = nn::PrecisionPolicy::parse(precision);
    options.loss_scaling = !no_loss_scaling;
    options.model.seed = options.seed;
    if (options.model.kind == "cnn" && hidden_opt->count() == 0) options.model.hidden = 16;
    if (options.device.is_cuda() && !do_compare && !cuda_available()) {
      std::cerr << "error: --device cuda: " << cuda_unavailable_reason() << "\n";
      return 1;
    }
    const bool is_gpt = options.model.kind == "gpt";
    if (is_gpt) {
      if (hidden_opt->count() == 0) options.model.hidden = 64;
      if (options.batch_size == 64) options.batch_size = 16;
      options.model.tie_head = !untied;
      gpt.sampling.seed = options.seed;
    }
    const Data data =
        is_gpt ? load_text(text_path, context) : load_data(idx_dir, train_size, test_size);
    if (is_gpt) test_size = data.test->size();
    const int64_t per_epoch = data.train->size() / options.batch_size;
    if (per_epoch == 0) {
      std::cerr << "error: --batch-size " << options.batch_size << " exceeds the "
                << data.train->size() << " training samples\n";
      return 1;
    }
    const int64_t total_steps = steps > 0 ? steps : epochs * per_epoch;
    if (profile_steps > 0) {
      profile(options, data, profile_steps, trace_path);
    } else if (do_compare) {
      compare(options, data, total_steps, test_size);
    } else {
      run(options, data, total_steps, test_size, resume, save, true, gpt);
    }
  } catch (const std::exception& e) {
    std::cerr << "error: " << e.what() << "\n";
    return 1;
  }
  return 0;
}
