// ops::has_non_finite / non_finite_flag_: inf and NaN found wherever they are, nothing found in
// finite data.
#include "gtl/ops/non_finite.h"

#include <cmath>
#include <limits>

#include "gtl_test.h"

namespace gtl::testing {
namespace {

std::vector<Tensor> finite_tensors(DType dtype) {
  Generator gen(21);
  return {Tensor::normal({1}, gen, 0, 100, dtype), Tensor::normal({7}, gen, 0, 100, dtype),
          Tensor::normal({1000}, gen, 0, 100, dtype), Tensor::full({5}, 65504.0, dtype)};
}

TEST(NonFinite, NothingInFiniteData) {
  for (DType dtype : {DType::Float32, DType::Float16, DType::BFloat16}) {
    EXPECT_FALSE(ops::has_non_finite(finite_tensors(dtype)))
        << dtype_name(dtype) << ": finite values (up to fp16's max 65504) reported as non-finite";
  }
  EXPECT_FALSE(ops::has_non_finite({}));
}

TEST(NonFinite, FindsInfAndNanAnywhere) {
  const float bad_values[] = {std::numeric_limits<float>::infinity(),
                              -std::numeric_limits<float>::infinity(),
                              std::numeric_limits<float>::quiet_NaN()};
  for (DType dtype : {DType::Float32, DType::Float16, DType::BFloat16}) {
    for (float bad : bad_values) {
      for (std::size_t which = 0; which < 3; ++which) {  // the tensors of size 1, 7 and 1000
        const int64_t n = finite_tensors(dtype)[which].numel();
        for (int64_t where : {int64_t{0}, n / 2, n - 1}) {
          std::vector<Tensor> tensors = finite_tensors(dtype);
          std::vector<float> values = tensors[which].to_vector();
          values[static_cast<std::size_t>(where)] = bad;
          tensors[which] = Tensor::from_vector(values, {n}, dtype);
          EXPECT_TRUE(ops::has_non_finite(tensors))
              << dtype_name(dtype) << ": missed " << bad << " at element " << where << " of tensor "
              << which << " (size " << n << ") of " << tensors.size();
        }
      }
    }
  }
}

TEST(NonFinite, Fp16OverflowIsInf) {
  const Tensor t = Tensor::from_vector({70000.f}, {1}, DType::Float16);
  EXPECT_TRUE(ops::has_non_finite({t})) << "70000 overflows fp16 (max 65504) to inf";
}

TEST(NonFinite, FlagAccumulatesAcrossCalls) {
  const Tensor flag = Tensor::zeros({1});
  ops::non_finite_flag_({Tensor::from_vector({NAN}, {1})}, flag);
  ops::non_finite_flag_(finite_tensors(DType::Float32), flag);
  EXPECT_EQ(flag.item(), 1.f) << "a clean call must not clear a flag an earlier call raised";
}

}  // namespace
}  // namespace gtl::testing
