// Lab 03, automatic mixed precision: what you write, step by step.
//
// This header is part of the pristine lab (labs/03-mixed-precision/include): do not edit it. Your
// files are in starter/03-mixed-precision/, one per step; the map from TODO to file, test and
// check is in the handout, labs/03-mixed-precision/README.md.
//
// The core (common/gtl) already has a reference for every step; the handout ("Do not open before
// finishing") lists the core files that hold a step's answer. You write your own here and plug it
// into the core's seams (a parameter's compute copy, the optimizer interface, the trainer); the
// rubric forbids calling the reference a step asks you to write. Everything runs on the CPU, which
// rounds fp16 and bf16 bit for bit as a GPU does.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "gtl/nn/models.h"
#include "gtl/nn/precision.h"
#include "gtl/optim/optimizer.h"
#include "gtl/runtime/device.h"
#include "gtl/tensor/tensor.h"

namespace lab03 {

using gtl::DType;
using gtl::Tensor;
using gtl::optim::ParamRef;

// ---- 1. Number formats (number_formats.cpp) ----------------------------------------------------
// The bits of x rounded to the nearest fp16 (1 sign, 5 exponent, 10 mantissa bits) or bf16
// (1, 8, 7), ties to even; subnormals kept; too large -> inf; NaN stays a NaN; the sign of 0 kept.
uint16_t round_to_fp16(float x);  // TODO 1 (region 1a)
uint16_t round_to_bf16(float x);  // TODO 1 (region 1b)

// Of the non-zero finite elements of a tensor, how many round to zero in each format.
struct UnderflowReport {
  int64_t nonzero = 0;     // non-zero finite elements examined
  int64_t fp16_zeros = 0;  // of those, how many round_to_fp16 makes zero
  int64_t bf16_zeros = 0;  // ... and round_to_bf16
  double fp16_fraction() const { return nonzero ? double(fp16_zeros) / double(nonzero) : 0.0; }
  double bf16_fraction() const { return nonzero ? double(bf16_zeros) / double(nonzero) : 0.0; }
};
// `values`: a float32 tensor on the CPU (e.g. the flat gradient of the lab model).
UnderflowReport count_underflow(const Tensor& values);  // given: counts with your 1a and 1b

// ---- 2. Autocast (autocast.cpp) ----------------------------------------------------------------
enum class Op {
  MatMul,
  Conv2d,
  Activation,
  Softmax,
  CrossEntropy,
  LayerNorm,
  Reduction,
  ResidualAdd
};
const char* op_name(Op op);  // "matmul", ...

// The dtype `op` computes in under `policy` (torch.autocast's choice), where an op that takes an
// activation is handed what a matmul under `policy` produced.
DType autocast_dtype(Op op, const gtl::nn::PrecisionPolicy& policy);  // TODO 2a

// Exactly the bytes one training step of the MLP `config` saves for backward (the model's Context
// plus the cross-entropy head's) for a batch of `batch` samples under `policy`: predicted from the
// layer shapes with autocast_dtype, not measured. (Only config.kind == "mlp".)
int64_t saved_activation_bytes(const gtl::nn::ModelConfig& config, int64_t batch,
                               const gtl::nn::PrecisionPolicy& policy);  // TODO 2b

// The half-precision copy of the weights, made ONCE per step instead of once per use. The core's
// Linear and Conv2d read a parameter's `compute` tensor when it has the dtype they compute in
// (nn::weight_as), and otherwise cast the float32 weight at every use (forward AND backward).
class HalfWeightCache {
 public:
  // Gives each parameter of `model` (any model built from the core's layers) that a layer reads
  // through nn::weight_as a `dtype` compute copy (fp16 or bf16, CPU), made here once, and fills
  // it; every other parameter gets none.
  HalfWeightCache(gtl::nn::Module& model, DType dtype);  // TODO 2c
  // compute = round(value) for every copy, in place (no allocation): once per step, after the
  // optimizer changed the float32 values.
  void refresh() const;  // TODO 2c
  // Bytes of all compute copies.
  int64_t bytes() const;  // TODO 2c

 private:
  std::vector<ParamRef*> slots_;  // the model's parameters that have a compute copy
  DType dtype_;
};

// ---- 3. Dynamic loss scaler (loss_scaler.cpp) --------------------------------------------------
// What the end of an AMP step needs from a loss scaler. DynamicLossScaler is one; the tests of
// step 5 also plug the core's scaler in through this interface.
class GradScaler {
 public:
  virtual ~GradScaler() = default;
  virtual float scale() const = 0;
  // grad *= 1 / scale() for every parameter (float32 gradients), and whether the step overflowed:
  // whether the optimizer would see an inf or NaN. Once per step.
  virtual bool unscale_(const std::vector<ParamRef>& params) = 0;
  // optimizer.step() unless the last unscale_ found an inf/NaN. Returns whether it stepped.
  virtual bool step(gtl::optim::Optimizer& optimizer) = 0;
  // Adjusts the scale from the last unscale_'s verdict; the next step may begin.
  virtual void update() = 0;
};

struct ScalerOptions {
  float init_scale = 65536.f;  // 2^16
  float growth_factor = 2.f;
  float backoff_factor = 0.5f;
  int64_t growth_interval = 2000;  // clean steps in a row before the scale grows
};

// What a checkpoint saves to continue the schedule exactly.
struct ScalerState {
  float scale = 65536.f;
  int64_t growth_tracker = 0;  // the schedule's counter (the handout's table, tracker row)
};

class DynamicLossScaler final : public GradScaler {
 public:
  explicit DynamicLossScaler(ScalerOptions options = {})
      : options_(options), state_{options.init_scale, 0} {}

  float scale() const override { return state_.scale; }
  bool unscale_(const std::vector<ParamRef>& params) override;  // TODO 3
  bool step(gtl::optim::Optimizer& optimizer) override;         // TODO 3
  void update() override;                                       // TODO 3

  bool found_inf() const { return found_inf_; }       // the last unscale_'s verdict, until update()
  int64_t skipped_steps() const { return skipped_; }  // steps step() skipped so far

  ScalerState state() const { return state_; }
  void load_state(const ScalerState& state) { state_ = state; }

 private:
  ScalerOptions options_;
  ScalerState state_;
  bool found_inf_ = false;
  int64_t skipped_ = 0;
};

// ---- 4. fp32 master weights (master_weights.cpp) -----------------------------------------------
// The float32 side of a half-precision model (the handout's "Master weights"): the optimizer, the
// scaler and clipping work on masters(), the forward and backward on the model's own tensors.
class MasterWeights {
 public:
  // `model_params`: what the model computes with (CPU), value and grad of one dtype each: fp16 or
  // bf16, or float32 (a half model keeps some parameters, often norms and biases, in float32).
  explicit MasterWeights(std::vector<ParamRef> model_params);  // TODO 4
  // One float32 master per model parameter, same name, shape and order. Building them allocates
  // only the float32 storage the model's own tensors cannot provide (the tests count the bytes).
  const std::vector<ParamRef>& masters() const { return masters_; }
  const std::vector<ParamRef>& model_params() const { return model_; }
  // Called after each backward (which writes the model's gradients), before the scaler, clipping
  // and the optimizer see the gradients.
  void grads_to_master() const;  // TODO 4
  // Called after each optimizer step (which writes the masters' values), before the next forward.
  void refresh_model() const;  // TODO 4

 private:
  std::vector<ParamRef> model_, masters_;
};

// ---- 5. Clipping in an AMP step (clip_step.cpp) ------------------------------------------------
// Clips float32 gradients by their global L2 norm with the coefficient of
// torch.nn.utils.clip_grad_norm_, computed in float32 as it computes it: the direction kept, the
// norm brought to max_norm when it was above. Returns the norm before clipping, as float (finite
// whenever the true norm fits one).
float clip_by_global_norm(const std::vector<ParamRef>& params, float max_norm);  // TODO 5

struct StepOutcome {
  bool stepped = false;   // false: an inf/NaN gradient, the optimizer step was skipped
  float grad_norm = 0.f;  // the global norm clipping measured, in true units, whether or not it
                          // scaled anything (0: clipping did not run)
};
// The end of an AMP step, after backward of loss * scaler.scale(): the optimizer steps exactly
// when every unscaled gradient is finite, on gradients whose global norm is at most `max_norm` in
// true units (<= 0: no clipping); the scaler's scale is updated once per step, stepped or not.
StepOutcome finish_amp_step(GradScaler& scaler, const std::vector<ParamRef>& params,
                            gtl::optim::Optimizer& optimizer, float max_norm);  // TODO 5

// ---- 6. The bf16 path (amp_recipe.cpp) ---------------------------------------------------------
struct AmpRecipe {
  gtl::nn::PrecisionPolicy policy;  // what matmuls compute in
  bool loss_scaling = false;        // a dynamic loss scaler is needed
  float init_scale = 1.f;           // its first scale (1 when there is none)
  bool master_weights = false;      // the optimizer steps float32 masters of half weights
};
// "fp32", "fp16" or "bf16"; throws gtl::Error naming the accepted values otherwise.
AmpRecipe amp_recipe(const std::string& precision);  // TODO 6

// ---- 7. Capstone (capstone.cpp): CPU vs GPU vs GPU+AMP -----------------------------------------
struct CapstoneOptions {
  gtl::nn::ModelConfig model;  // the lab's MNIST-style MLP by default
  int64_t steps = 300;
  int64_t batch_size = 64;
  int64_t train_size = 60000;   // synthetic digits (ignored with idx_dir)
  int64_t eval_samples = 2000;  // test digits for the final accuracy
  std::string idx_dir;          // MNIST IDX files instead of synthetic digits, when set
};

struct CapstoneRow {
  std::string name;       // "CPU FP32", "GPU FP32", "GPU FP16", "GPU BF16"
  std::string device;     // "cpu", "cuda:0"
  std::string precision;  // amp_recipe name
  bool skipped = false;
  std::string skip_reason;       // gtl::cuda_unavailable_reason(); printed after "skipped: "
  double seconds_per_epoch = 0;  // mean step time x batches per epoch
  double speedup_vs_cpu = 0;     // CPU row's seconds_per_epoch / this row's (CPU row: 1)
  int64_t peak_bytes = 0;        // the training thread's peak over the steps (see capstone.cpp)
  float accuracy = 0;            // test accuracy after the last step, a fraction in [0, 1]
  float final_loss = 0;          // training loss of the last step
  int64_t skipped_steps = 0;     // steps skipped on fp16 overflow
};

// Trains one row from scratch on `device` under `precision` ("fp32", "fp16", "bf16") with the
// core's train::Trainer (which scales the loss for fp16), then evaluates it.
CapstoneRow run_capstone_row(const std::string& name, gtl::Device device,
                             const std::string& precision,
                             const CapstoneOptions& options);  // TODO 7
// The four rows in the order above; GPU rows are skipped (with the reason) without a GPU.
std::vector<CapstoneRow> run_capstone(const CapstoneOptions& options);  // given

}  // namespace lab03
