// The CUDA path of every op in this folder against its CPU path (itself checked against double
// references in the CPU tests), for every floating dtype, on odd sizes: one element, rows that
// are not a multiple of 32 (a warp), a 10000-wide row, 100003 elements (not a multiple of any
// block size), empty tensors, views at odd offsets and special values (inf, NaN, -0, limits).
// Also: mixing a CPU and a CUDA tensor is an error naming both devices. Built twice: for a GPU
// (label gpu) and on the CPU emulator (ops_emulated_test, label cpu, smaller large sizes).
//
// Tolerances (atol, rtol), GPU against CPU: the GPU reduces in float32 in a different order than
// the CPU's double accumulators and uses its own expf/tanh, and a 16-bit result may round to the
// neighbouring value, one ulp (2^-10 relative for float16, 2^-7 for bfloat16):
//   element-wise float32 (1e-6, 1e-5); row-wise (softmax, cross-entropy, LayerNorm) float32
//   (1e-5, 1e-4); float16 (1e-4, 2e-3); bfloat16 (1e-3, 1.6e-2); float32 results of 16-bit
//   inputs (losses, sums, mean, rstd) as float32. Column sums over R rows: atol 1e-6 * R.
#include <algorithm>
#include <cmath>
#include <functional>
#include <limits>
#include <string>
#include <vector>

#include "gtl/ops/activations.h"
#include "gtl/ops/cross_entropy.h"
#include "gtl/ops/elementwise.h"
#include "gtl/ops/layernorm.h"
#include "gtl/ops/reduce.h"
#include "gtl/ops/softmax.h"
#include "ops_reference.h"

namespace gtl::ops {
namespace {

using testing::expect_close;
using testing::random_tensor;
using testing::Tolerance;

using Op = std::function<std::vector<Tensor>(const std::vector<Tensor>&)>;

const DType kDtypes[] = {DType::Float32, DType::Float16, DType::BFloat16};
// Under the CPU emulator (GTL_EMULATED_CUDA) the largest sizes shrink: 4099 elements still span
// 17 blocks of 256 and end mid-warp, a 1500-wide row still takes a warp 47 turns.
const int64_t kLarge = testing::gpu_or_emulated(100003, 4099);
const int64_t kSizes[] = {1, 3, 17, 1000, kLarge};
const int64_t kShapes[][2] = {
    {1, 1}, {3, 17}, {1000, 3}, {33, 1000}, {5, testing::gpu_or_emulated(10000, 1500)}};

Tolerance tol_for(DType out_dtype, bool row_wise) {
  switch (out_dtype) {
    case DType::Float16:
      return {1e-4, 2e-3};
    case DType::BFloat16:
      return {1e-3, 1.6e-2};
    default:
      return row_wise ? Tolerance{1e-5, 1e-4} : Tolerance{1e-6, 1e-5};
  }
}

std::string shape_name(int64_t rows, int64_t cols) {
  return shape_str({rows, cols});
}

// Runs `op` on the CPU inputs and on copies of them on the GPU, and compares every output.
// Tolerances are chosen per output by its dtype; `sum_rows` widens atol for column sums.
void expect_gpu_matches_cpu(const std::string& what, const std::vector<Tensor>& cpu_inputs,
                            const Op& op, bool row_wise, double column_sum_rows = 0) {
  std::vector<Tensor> gpu_inputs;
  for (const Tensor& t : cpu_inputs) gpu_inputs.push_back(t.to(Device::cuda(0)));
  const std::vector<Tensor> expected = op(cpu_inputs);
  const std::vector<Tensor> actual = op(gpu_inputs);
  ASSERT_EQ(actual.size(), expected.size()) << what;
  for (std::size_t i = 0; i < actual.size(); ++i) {
    ASSERT_TRUE(actual[i].is_cuda()) << what << ": output " << i << " must stay on the GPU";
    ASSERT_EQ(actual[i].dtype(), expected[i].dtype()) << what << ": output " << i;
    Tolerance tol = tol_for(actual[i].dtype(), row_wise);
    if (column_sum_rows > 0 && actual[i].dim() == 1 && actual[i].dtype() == DType::Float32)
      tol.atol = std::max(tol.atol, 1e-6 * column_sum_rows);
    expect_close(actual[i], expected[i], tol,
                 what + ", output " + std::to_string(i) + ": CUDA path against CPU path");
  }
}

Tensor labels_for(int64_t rows, int64_t cols, uint64_t seed, DType dtype) {
  std::vector<float> u = random_tensor({rows}, seed, 0.f, 1.f).to_vector();
  for (float& v : u) v = std::min<float>(static_cast<float>(cols - 1), std::floor(v * cols));
  return Tensor::from_vector(u, {rows}, dtype);
}

TEST(OpsGpu, ElementwiseMatchesCpu) {
  GTL_REQUIRE_GPU();
  for (DType dt : kDtypes) {
    for (int64_t n : kSizes) {
      const std::string ctx = std::string(dtype_name(dt)) + " n=" + std::to_string(n);
      const std::vector<Tensor> in = {random_tensor({n}, 1, -3.f, 3.f, dt),
                                      random_tensor({n}, 2, -3.f, 3.f, dt)};
      expect_gpu_matches_cpu(
          "add " + ctx, in, [](auto& t) { return std::vector{add(t[0], t[1])}; }, false);
      expect_gpu_matches_cpu(
          "mul " + ctx, in, [](auto& t) { return std::vector{mul(t[0], t[1])}; }, false);
      expect_gpu_matches_cpu(
          "scale " + ctx, in, [](auto& t) { return std::vector{scale(t[0], -0.3f)}; }, false);
      expect_gpu_matches_cpu(
          "add_ / mul_ / scale_ " + ctx, in,
          [](auto& t) {
            Tensor a = t[0].clone(), m = t[0].clone(), s = t[0].clone();
            add_(a, t[1]);
            mul_(m, t[1]);
            scale_(s, 1.7f);
            return std::vector{a, m, s};
          },
          false);
      expect_gpu_matches_cpu(
          "axpy_ " + ctx, in,
          [](auto& t) {
            Tensor y = t[1].clone();
            axpy_(-0.5f, t[0], y);
            return std::vector{y};
          },
          false);
    }
    for (const auto& s : kShapes) {
      for (DType bias_dt : kDtypes) {
        const std::string ctx = std::string(dtype_name(dt)) + " x, " + dtype_name(bias_dt) +
                                " bias, " + shape_name(s[0], s[1]);
        expect_gpu_matches_cpu(
            "bias_add / bias_add_ " + ctx,
            {random_tensor({s[0], s[1]}, 3, -3.f, 3.f, dt),
             random_tensor({s[1]}, 4, -1.f, 1.f, bias_dt)},
            [](auto& t) {
              Tensor inplace = t[0].clone();
              bias_add_(inplace, t[1]);
              return std::vector{bias_add(t[0], t[1]), inplace};
            },
            false);
      }
    }
  }
}

TEST(OpsGpu, ActivationsMatchCpu) {
  GTL_REQUIRE_GPU();
  for (DType dt : kDtypes) {
    for (int64_t n : kSizes) {
      const std::string ctx = std::string(dtype_name(dt)) + " n=" + std::to_string(n);
      expect_gpu_matches_cpu(
          "relu, gelu and their backward " + ctx,
          {random_tensor({n}, 5, -8.f, 8.f, dt), random_tensor({n}, 6, -1.f, 1.f, dt)},
          [](auto& t) {
            return std::vector{relu(t[0]), gelu(t[0]), relu_backward(t[0], t[1]),
                               gelu_backward(t[0], t[1])};
          },
          false);
    }
  }
}

TEST(OpsGpu, ReductionsMatchCpu) {
  GTL_REQUIRE_GPU();
  for (DType dt : kDtypes) {
    for (int64_t n : kSizes) {
      expect_gpu_matches_cpu(
          "sum, mean, max " + std::string(dtype_name(dt)) + " n=" + std::to_string(n),
          {random_tensor({n}, 7, -1.f, 2.f, dt)},
          [](auto& t) {
            return std::vector{sum(t[0]), mean(t[0]), max(t[0])};
          },
          true);
    }
    for (const auto& s : kShapes) {
      expect_gpu_matches_cpu(
          "sum_rows " + std::string(dtype_name(dt)) + " " + shape_name(s[0], s[1]),
          {random_tensor({s[0], s[1]}, 8, -1.f, 1.f, dt)},
          [](auto& t) { return std::vector{sum_rows(t[0])}; }, true, static_cast<double>(s[0]));
    }
    expect_gpu_matches_cpu(
        "sum_rows " + std::string(dtype_name(dt)) + " " + shape_name(kLarge, 5),
        {random_tensor({kLarge, 5}, 9, -1.f, 1.f, dt)},
        [](auto& t) { return std::vector{sum_rows(t[0])}; }, true, static_cast<double>(kLarge));
  }
  // Empty tensors: no kernel may be launched with an empty grid.
  expect_gpu_matches_cpu(
      "sum and mean of an empty tensor", {Tensor::zeros({0})},
      [](auto& t) {
        return std::vector{sum(t[0]), mean(t[0])};
      },
      true);
  const Tensor nan_in = Tensor::from_vector({1.f, std::nanf(""), 3.f}, {3}).to(Device::cuda(0));
  EXPECT_TRUE(std::isnan(max(nan_in).item())) << "the GPU max must propagate NaN (fmaxf drops it)";
}

TEST(OpsGpu, SoftmaxMatchesCpu) {
  GTL_REQUIRE_GPU();
  for (DType dt : kDtypes) {
    for (const auto& s : kShapes) {
      for (float magnitude : {8.f, 1e4f}) {
        const std::string ctx = std::string(dtype_name(dt)) + " " + shape_name(s[0], s[1]) +
                                " logits up to " + std::to_string(magnitude);
        expect_gpu_matches_cpu(
            "softmax, log_softmax and their backward " + ctx,
            {random_tensor({s[0], s[1]}, 10, -magnitude, magnitude, dt),
             random_tensor({s[0], s[1]}, 11, -1.f, 1.f, dt)},
            [](auto& t) {
              const Tensor y = softmax(t[0]), ly = log_softmax(t[0]);
              return std::vector{y, ly, softmax_backward(y, t[1]), log_softmax_backward(ly, t[1])};
            },
            true);
      }
    }
  }
  const float inf = std::numeric_limits<float>::infinity();
  expect_gpu_matches_cpu(
      "softmax with -inf (masked) entries",
      {Tensor::from_vector({-inf, 1.f, -inf, 2.f, 0.f, -inf}, {2, 3})},
      [](auto& t) {
        return std::vector{softmax(t[0]), log_softmax(t[0])};
      },
      true);
}

TEST(OpsGpu, CrossEntropyMatchesCpu) {
  GTL_REQUIRE_GPU();
  for (DType dt : kDtypes) {
    for (DType label_dt : {DType::Int32, DType::Int64}) {
      for (const auto& s : kShapes) {
        const std::string ctx = std::string(dtype_name(dt)) + " logits, " + dtype_name(label_dt) +
                                " labels, " + shape_name(s[0], s[1]);
        expect_gpu_matches_cpu(
            "cross_entropy, its backward and accuracy " + ctx,
            {random_tensor({s[0], s[1]}, 12, -6.f, 6.f, dt), labels_for(s[0], s[1], 13, label_dt)},
            [](auto& t) {
              return std::vector{cross_entropy(t[0], t[1]), cross_entropy_backward(t[0], t[1], 2.f),
                                 accuracy(t[0], t[1])};
            },
            true);
      }
    }
    expect_gpu_matches_cpu(
        std::string("cross_entropy with logits ~1e4, ") + dtype_name(dt),
        {random_tensor({9, 40}, 14, -1e4f, 1e4f, dt), labels_for(9, 40, 15, DType::Int64)},
        [](auto& t) {
          return std::vector{cross_entropy(t[0], t[1]), cross_entropy_backward(t[0], t[1])};
        },
        true);
  }
  // A label out of range cannot throw from a kernel: it must show up as NaN, never pass.
  const Tensor logits = Tensor::zeros({2, 3}, DType::Float32, Device::cuda(0));
  const Tensor bad = Tensor::from_vector({0, 7}, {2}, DType::Int32).to(Device::cuda(0));
  EXPECT_TRUE(std::isnan(cross_entropy(logits, bad).item()))
      << "a label outside [0, C) on the GPU must make the loss NaN";
}

TEST(OpsGpu, LayerNormMatchesCpu) {
  GTL_REQUIRE_GPU();
  for (DType dt : kDtypes) {
    for (DType wdt : kDtypes) {
      for (const auto& s : kShapes) {
        const std::string ctx = std::string(dtype_name(dt)) + " x, " + dtype_name(wdt) +
                                " weight, " + shape_name(s[0], s[1]);
        expect_gpu_matches_cpu(
            "layernorm forward and backward " + ctx,
            {random_tensor({s[0], s[1]}, 16, -3.f, 5.f, dt),
             random_tensor({s[1]}, 17, 0.5f, 1.5f, wdt), random_tensor({s[1]}, 18, -1.f, 1.f, wdt),
             random_tensor({s[0], s[1]}, 19, -1.f, 1.f, dt)},
            [](auto& t) {
              const LayerNormForward f = layernorm_forward(t[0], t[1], t[2]);
              const LayerNormBackward g = layernorm_backward(t[3], t[0], t[1], f.mean, f.rstd);
              return std::vector{f.out, f.mean, f.rstd, g.dx, g.dweight, g.dbias};
            },
            true, static_cast<double>(s[0]));
      }
    }
  }
  expect_gpu_matches_cpu(
      "layernorm of inputs near 1e4 (two-pass variance)",
      {random_tensor({7, 333}, 20, 1e4f - 1.f, 1e4f + 1.f), Tensor::ones({333}),
       Tensor::zeros({333})},
      [](auto& t) {
        const LayerNormForward f = layernorm_forward(t[0], t[1], t[2]);
        return std::vector{f.out, f.rstd};
      },
      true);
}

// Empty tensors on every op: no kernel may be launched with an empty grid (a launch error), and
// the results (empty tensors, zero column sums, zero LayerNorm weight gradients) match the CPU.
TEST(OpsGpu, ZeroSizeTensorsMatchCpu) {
  GTL_REQUIRE_GPU();
  for (DType dt : kDtypes) {
    const std::string ctx = std::string(" of empty ") + dtype_name(dt) + " tensors";
    const Tensor flat = Tensor::zeros({0}, dt), rows = Tensor::zeros({0, 5}, dt);
    expect_gpu_matches_cpu(
        "element-wise ops and activations" + ctx, {flat, flat},
        [](auto& t) {
          Tensor y = t[1].clone();
          axpy_(2.f, t[0], y);
          return std::vector{add(t[0], t[1]), mul(t[0], t[1]), scale(t[0], 3.f),         y,
                             relu(t[0]),      gelu(t[0]),      gelu_backward(t[0], t[1])};
        },
        false);
    expect_gpu_matches_cpu(
        "bias_add, sum_rows, softmax and log_softmax" + ctx,
        {rows, random_tensor({5}, 21, -1.f, 1.f, dt), Tensor::zeros({5, 0}, dt)},
        [](auto& t) {
          return std::vector{bias_add(t[0], t[1]), sum_rows(t[0]), sum_rows(t[2]), softmax(t[0]),
                             log_softmax(t[0])};
        },
        true);
    expect_gpu_matches_cpu(
        "layernorm forward and backward" + ctx,
        {Tensor::zeros({0, 7}, dt), Tensor::ones({7}), Tensor::zeros({7}),
         Tensor::zeros({0, 7}, dt)},
        [](auto& t) {
          const LayerNormForward f = layernorm_forward(t[0], t[1], t[2]);
          const LayerNormBackward g = layernorm_backward(t[3], t[0], t[1], f.mean, f.rstd);
          return std::vector{f.out, f.mean, f.rstd, g.dx, g.dweight, g.dbias};
        },
        true);
  }
}

// Views that start at an odd element of their storage (slice(1, ...)): for 16-bit types the data
// is then only 2-byte aligned, which a kernel using wide (vector) loads would get wrong, and
// every kernel must index from the view's start, not the storage's.
TEST(OpsGpu, ViewsAtOddOffsetsMatchCpu) {
  GTL_REQUIRE_GPU();
  for (DType dt : kDtypes) {
    const std::string ctx = std::string(" on views at odd offsets, ") + dtype_name(dt);
    // Views made on each device from the same full tensors, so the GPU's start at the same offset.
    const auto views = [](const std::vector<Tensor>& t) {
      return std::vector{t[0].slice(1, t[0].size(0)), t[1].slice(3, t[1].size(0)),
                         t[2].slice(1, t[2].size(0))};
    };
    expect_gpu_matches_cpu(
        "element-wise ops, activations and reductions" + ctx,
        {random_tensor({1000}, 22, -3.f, 3.f, dt), random_tensor({1002}, 23, -3.f, 3.f, dt),
         random_tensor({38, 37}, 24, -4.f, 4.f, dt)},
        [&](auto& full) {
          const std::vector<Tensor> t = views(full);
          Tensor y = t[1].clone();
          axpy_(0.5f, t[0], y);
          return std::vector{add(t[0], t[1]), gelu(t[0]),    y, sum(t[1]), max(t[0]),
                             softmax(t[2]),   sum_rows(t[2])};
        },
        true, 37.0);
  }
}

// Infinities, NaN, signed zeros and values near the dtype's limits go through the CUDA path as
// through the CPU path (expect_close requires NaN where the CPU has NaN and equal infinities).
TEST(OpsGpu, SpecialValuesMatchCpu) {
  GTL_REQUIRE_GPU();
  const float inf = std::numeric_limits<float>::infinity(), nan = std::nanf("");
  const std::vector<float> special = {0.f,   -0.f, inf,  -inf,    nan,      1e-30f, -1e-30f,
                                      3e38f, 1.f,  -1.f, 60000.f, -60000.f, 7.f,    -7.f};
  const int64_t n = static_cast<int64_t>(special.size());
  for (DType dt : kDtypes) {
    const std::string ctx = std::string(" on special values, ") + dtype_name(dt);
    const Tensor x = Tensor::from_vector(special, {n}, dt);
    std::vector<float> reversed(special.rbegin(), special.rend());
    const Tensor y = Tensor::from_vector(reversed, {n}, dt);
    expect_gpu_matches_cpu(
        "add, mul, scale, relu, gelu and their backward" + ctx, {x, y},
        [](auto& t) {
          return std::vector{
              add(t[0], t[1]), mul(t[0], t[1]),           scale(t[0], 0.5f),        relu(t[0]),
              gelu(t[0]),      relu_backward(t[0], t[1]), gelu_backward(t[0], t[1])};
        },
        false);
    expect_gpu_matches_cpu(
        "sum, max, softmax and log_softmax" + ctx, {x, x.reshape({2, n / 2})},
        [](auto& t) {
          return std::vector{sum(t[0]), max(t[0]), softmax(t[1]), log_softmax(t[1])};
        },
        true);
    // Row 0 holds inf, -inf and NaN; row 1 finite values up to 3e38 (inf in float16), whose
    // squares overflow float: LayerNorm must still normalise it. No NaN may leak across rows.
    expect_gpu_matches_cpu(
        "cross_entropy, its backward, layernorm forward and backward" + ctx,
        {x.slice(0, 12).reshape({2, 6}), Tensor::from_vector({1.f, 4.f}, {2}, DType::Int32),
         Tensor::ones({6}), Tensor::zeros({6}), random_tensor({2, 6}, 25, -1.f, 1.f, dt)},
        [](auto& t) {
          const LayerNormForward f = layernorm_forward(t[0], t[2], t[3]);
          const LayerNormBackward g = layernorm_backward(t[4], t[0], t[2], f.mean, f.rstd);
          return std::vector{cross_entropy(t[0], t[1]),
                             cross_entropy_backward(t[0], t[1]),
                             f.out,
                             f.mean,
                             f.rstd,
                             g.dx,
                             g.dweight,
                             g.dbias};
        },
        true);
  }
}

TEST(OpsGpu, MixingDevicesNamesBoth) {
  GTL_REQUIRE_GPU();
  const Tensor c = Tensor::zeros({2, 3}),
               g = Tensor::zeros({2, 3}, DType::Float32, Device::cuda(0));
  const std::vector<std::string> both = {"cpu", "cuda:0"};
  testing::expect_error_naming([&] { add(c, g); }, both, "add of a CPU and a CUDA tensor");
  testing::expect_error_naming([&] { axpy_(1.f, g, c); }, both, "axpy_ across devices");
  testing::expect_error_naming([&] { gelu_backward(c, g); }, both, "gelu_backward across devices");
  testing::expect_error_naming([&] { softmax_backward(g, c); }, both,
                               "softmax_backward across devices");
  testing::expect_error_naming([&] { bias_add(g, Tensor::zeros({3})); }, both,
                               "bias_add across devices");
  testing::expect_error_naming([&] { cross_entropy(g, Tensor::zeros({2}, DType::Int32)); }, both,
                               "cross_entropy across devices");
  testing::expect_error_naming([&] { layernorm_forward(g, Tensor::ones({3}), Tensor::zeros({3})); },
                               both, "layernorm_forward across devices");
}

}  // namespace
}  // namespace gtl::ops
