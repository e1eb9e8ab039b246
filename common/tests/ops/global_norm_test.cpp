// ops::global_l2_norm against a double reference, for float32, float16 and bfloat16 inputs.
#include "gtl/ops/global_norm.h"

#include <cmath>

#include "gtl_test.h"

namespace gtl::testing {
namespace {

double reference_norm(const std::vector<Tensor>& tensors) {
  double sum = 0;
  for (const Tensor& t : tensors)
    for (float v : t.to_vector()) sum += double{v} * v;
  return std::sqrt(sum);
}

// The reference squares the same (already rounded) input values, so only the float32 result
// rounding separates the two.
constexpr Tolerance kNormTol{0, 1e-6};

TEST(GlobalNorm, MatchesDoubleReferenceForEveryDtype) {
  for (DType dtype : {DType::Float32, DType::Float16, DType::BFloat16}) {
    Generator gen(8);
    std::vector<Tensor> tensors;
    for (int64_t n : {1, 7, 1000, 0, 4097})
      tensors.push_back(Tensor::normal({n}, gen, 0, 3, dtype));
    const Tensor norm = ops::global_l2_norm(tensors);
    EXPECT_EQ(norm.dtype(), DType::Float32);
    EXPECT_EQ(norm.shape(), Shape{1});
    const std::string err =
        compare(norm.to_vector(), {static_cast<float>(reference_norm(tensors))}, kNormTol);
    EXPECT_TRUE(err.empty()) << "global L2 norm of " << dtype_name(dtype) << " tensors: " << err;
  }
}

// 300^2 = 90000 overflows fp16: the squares must be computed in float32.
TEST(GlobalNorm, HalfInputsAreSquaredInFloat32) {
  const Tensor t = Tensor::full({4}, 300.0, DType::Float16);
  const std::string err = compare(ops::global_l2_norm({t}).to_vector(), {600.f}, kNormTol);
  EXPECT_TRUE(err.empty()) << "norm of four fp16 300s is 600 (an fp16 accumulator gives inf): "
                           << err;
}

TEST(GlobalNorm, EmptyListIsZero) {
  EXPECT_EQ(ops::global_l2_norm({}).item(), 0.f);
}

TEST(GlobalNorm, NonFiniteInputGivesNonFiniteNorm) {
  const Tensor t = Tensor::from_vector({1.f, INFINITY}, {2});
  EXPECT_TRUE(std::isinf(ops::global_l2_norm({t}).item()))
      << "an inf gradient must show in the norm, not be hidden";
}

}  // namespace
}  // namespace gtl::testing
