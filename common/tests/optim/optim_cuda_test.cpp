// The GPU paths against the CPU paths: the fused SGD and AdamW kernels for every parameter dtype
// (float32, float16, bfloat16, float32 master with an fp16/bf16 compute copy), the global norm,
// the non-finite check, clipping and the loss scaler's fused unscale.
//
// Both backends run the same float32 rule (update_rules.h); they may differ only where the GPU
// contracts a*b+c into one fused multiply-add, a rounding of one float32 ulp per operation.
#include <functional>
#include <memory>

#include "gtl/ops/global_norm.h"
#include "gtl/ops/non_finite.h"
#include "gtl/optim/adamw.h"
#include "gtl/optim/grad_clip.h"
#include "gtl/optim/loss_scaler.h"
#include "gtl/optim/master_weights.h"
#include "gtl/optim/sgd.h"
#include "optim_test_util.h"

namespace gtl::testing {
namespace {

// float32 results: a few ulps after 3 steps. Half results: a float32 value that lands within an
// ulp of a rounding boundary can round to the neighbouring half value on one device, and such a
// flip may happen at each step: allow two half ulps (2^-10 relative for fp16, 2^-7 for bf16).
Tolerance tolerance_for(DType dtype) {
  switch (dtype) {
    case DType::Float16:
      return {2e-3, 2e-3};
    case DType::BFloat16:
      return {2e-2, 1.6e-2};
    default:
      return {1e-6, 1e-5};
  }
}

using MakeOptimizer =
    std::function<std::unique_ptr<optim::Optimizer>(const std::vector<optim::ParamRef>&)>;

// Same parameters and gradients on both devices; `compute` != Float32 adds master weights.
void compare_devices(const MakeOptimizer& make, DType value_dtype, DType compute_dtype,
                     const std::string& what) {
  Generator gen(61);
  const DType model_dtype = compute_dtype == DType::Float32 ? value_dtype : compute_dtype;
  auto cpu_model = make_params(gen, model_dtype);
  auto gpu_model = copy_params(cpu_model, Device::cuda());
  const bool master = compute_dtype != DType::Float32;
  std::unique_ptr<optim::MasterWeights> cpu_master, gpu_master;
  if (master) {
    cpu_master = std::make_unique<optim::MasterWeights>(cpu_model);
    gpu_master = std::make_unique<optim::MasterWeights>(gpu_model);
  }
  auto cpu_opt = make(master ? cpu_master->params() : cpu_model);
  auto gpu_opt = make(master ? gpu_master->params() : gpu_model);
  for (int step = 0; step < 3; ++step) {
    fill_grads(cpu_model, gen);  // drawn once and copied: both devices see the same gradients
    for (std::size_t k = 0; k < cpu_model.size(); ++k) gpu_model[k].grad.copy_(cpu_model[k].grad);
    if (master) {
      cpu_master->grads_to_master();
      gpu_master->grads_to_master();
    }
    cpu_opt->step();
    gpu_opt->step();
  }
  for (std::size_t k = 0; k < cpu_model.size(); ++k) {
    expect_close(gpu_model[k].value.to(Device::cpu()), cpu_model[k].value,
                 tolerance_for(model_dtype), what + ": model value " + cpu_model[k].name);
  }
  // Pure-half weights enter the state through weight decay, so their state inherits the half
  // tolerance; with float32 values (master or not) the state is float32 work only.
  const auto cs = cpu_opt->state(), gs = gpu_opt->state();
  for (std::size_t i = 0; i < cs.size(); ++i)
    expect_close(gs[i].second.to(Device::cpu()), cs[i].second, tolerance_for(value_dtype),
                 what + ": state " + cs[i].first);
  if (master) {
    for (std::size_t k = 0; k < cpu_model.size(); ++k)
      expect_close(gpu_master->params()[k].value.to(Device::cpu()), cpu_master->params()[k].value,
                   tolerance_for(DType::Float32), what + ": master " + cpu_model[k].name);
  }
}

struct Case {
  DType value, compute;
  const char* name;
};
const Case kCases[] = {{DType::Float32, DType::Float32, "float32"},
                       {DType::Float16, DType::Float32, "float16"},
                       {DType::BFloat16, DType::Float32, "bfloat16"},
                       {DType::Float32, DType::Float16, "master+float16"},
                       {DType::Float32, DType::BFloat16, "master+bfloat16"}};

TEST(OptimCuda, SgdKernelMatchesCpu) {
  GTL_REQUIRE_GPU();
  for (const Case& c : kCases) {
    compare_devices(
        [](const auto& p) {
          return std::make_unique<optim::Sgd>(p, optim::SgdOptions{0.05f, 0.9f, 0.01f, true});
        },
        c.value, c.compute, std::string("Sgd ") + c.name);
  }
}

TEST(OptimCuda, AdamWKernelMatchesCpu) {
  GTL_REQUIRE_GPU();
  for (const Case& c : kCases) {
    compare_devices(
        [](const auto& p) {
          return std::make_unique<optim::AdamW>(
              p, optim::AdamWOptions{1e-2f, 0.9f, 0.999f, 1e-8f, 0.1f});
        },
        c.value, c.compute, std::string("AdamW ") + c.name);
  }
}

TEST(OptimCuda, GlobalNormMatchesCpu) {
  GTL_REQUIRE_GPU();
  for (DType dtype : {DType::Float32, DType::Float16, DType::BFloat16}) {
    Generator gen(62);
    std::vector<Tensor> cpu, gpu;
    for (int64_t n :
         {int64_t{1}, int64_t{7}, int64_t{1000}, int64_t{0}, gpu_or_emulated(300000, 5003)}) {
      cpu.push_back(Tensor::normal({n}, gen, 0, 2, dtype));
      gpu.push_back(cpu.back().to(Device::cuda()));
    }
    const Tensor g = ops::global_l2_norm(gpu);
    EXPECT_TRUE(g.is_cuda()) << "the norm must stay on the GPU (no host round trip)";
    expect_close(g.to(Device::cpu()), ops::global_l2_norm(cpu), {0, 1e-5},
                 std::string("global norm, ") + dtype_name(dtype));
  }
}

TEST(OptimCuda, GlobalNormOfHugeFiniteGradientsIsFinite) {
  GTL_REQUIRE_GPU();
  // (4e19)^2 overflows float32: the squares must be summed in double, as on the CPU.
  const Tensor g = Tensor::from_vector({3e19f, -4e19f}, {2});
  expect_close(ops::global_l2_norm({g.to(Device::cuda())}).to(Device::cpu()),
               ops::global_l2_norm({g}), {0, 1e-6}, "norm of (3e19, -4e19)");
}

TEST(OptimCuda, NonFiniteOnGpu) {
  GTL_REQUIRE_GPU();
  for (DType dtype : {DType::Float32, DType::Float16, DType::BFloat16}) {
    Generator gen(63);
    std::vector<Tensor> tensors;
    const int64_t big = gpu_or_emulated(100000, 4000);
    for (int64_t n : {int64_t{1}, int64_t{7}, big})
      tensors.push_back(Tensor::normal({n}, gen, 0, 1, dtype, Device::cuda()));
    EXPECT_FALSE(ops::has_non_finite(tensors)) << dtype_name(dtype) << ": finite data";
    for (float bad : {INFINITY, NAN}) {
      for (int64_t where : {int64_t{0}, big / 2, big - 1}) {
        std::vector<float> v = tensors[2].to_vector();
        v[static_cast<std::size_t>(where)] = bad;
        std::vector<Tensor> with_bad = tensors;
        with_bad[2] = Tensor::from_vector(v, {big}, dtype).to(Device::cuda());
        EXPECT_TRUE(ops::has_non_finite(with_bad))
            << dtype_name(dtype) << ": missed " << bad << " at element " << where;
      }
    }
  }
}

TEST(OptimCuda, ClipAndUnscaleMatchCpu) {
  GTL_REQUIRE_GPU();
  Generator gen(64);
  auto cpu = make_params(gen);
  fill_grads(cpu, gen, 100.f);
  auto gpu = copy_params(cpu, Device::cuda());
  optim::LossScaler cpu_scaler, gpu_scaler;
  cpu_scaler.unscale_(cpu);
  gpu_scaler.unscale_(gpu);
  const Tensor cpu_norm = optim::clip_grad_norm_(cpu, 1e-3f);
  const Tensor gpu_norm = optim::clip_grad_norm_(gpu, 1e-3f);
  expect_close(gpu_norm.to(Device::cpu()), cpu_norm, {0, 1e-5}, "clip: total norm");
  for (std::size_t k = 0; k < cpu.size(); ++k)
    expect_close(gpu[k].grad.to(Device::cpu()), cpu[k].grad, {1e-9, 1e-5},
                 "unscaled and clipped gradient " + cpu[k].name);

  optim::ParamRef p{Tensor::ones({5}, DType::Float32, Device::cuda()),
                    Tensor::from_vector({1, 2, INFINITY, 4, 5}, {5}).to(Device::cuda())};
  optim::Sgd sgd({p}, {});
  optim::LossScaler scaler;
  EXPECT_FALSE(scaler.step(sgd)) << "the GPU unscale must raise the overflow flag";
  scaler.update();
  EXPECT_EQ(scaler.scale(), 32768.f);
  expect_close(p.value.to(Device::cpu()), Tensor::ones({5}), {0, 0}, "skipped step on the GPU");
}

TEST(OptimCuda, ClipWithNonFiniteNormMatchesCpu) {
  GTL_REQUIRE_GPU();
  for (float bad : {INFINITY, NAN}) {
    const Tensor grad = Tensor::from_vector({1.f, bad, -2.f}, {3});
    optim::ParamRef cpu{Tensor::zeros({3}), grad.clone()};
    optim::ParamRef gpu{Tensor::zeros({3}, DType::Float32, Device::cuda()),
                        grad.to(Device::cuda())};
    optim::clip_grad_norm_({cpu}, 1.f);
    optim::clip_grad_norm_({gpu}, 1.f);
    expect_close(gpu.grad.to(Device::cpu()), cpu.grad, {0, 0},
                 std::string("clip with a gradient of ") + (std::isnan(bad) ? "NaN" : "inf"));
  }
}

}  // namespace
}  // namespace gtl::testing
