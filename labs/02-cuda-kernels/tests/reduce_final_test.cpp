// TODO 1c on a GPU: your reduce_sum (reduce.cu) built with the reference block reduction
// (tests/reference/block_reduce.cuh, the core's) in place of yours, so that this check says
// whether 1c is right whatever the state of 1b (kernels_test.cpp tests 1b itself). Skips, with the
// reason, without a GPU.
#include <gtest/gtest.h>

#include "gtl_judge_output.h"
#include "gtl_test.h"
#include "kernel_gpu_cases.h"

#ifdef GTL_WITH_CUDA
#include "kernels.h"
#include "reduce_gpu_check.h"
#endif

namespace {

#ifdef GTL_WITH_CUDA

TEST(ReduceFinal, SeveralElementsPerThreadSumAnySize) {
  GTL_REQUIRE_GPU();
  expect_gpu_reduces_every_size("ReduceFinal.SeveralElementsPerThreadSumAnySize",
                                "TODO 1c several elements per thread", lab02::reduce_sum);
}

TEST(ReduceFinal, IntegersSumExactly) {
  GTL_REQUIRE_GPU();
  const gtl::Tensor x = lab02_gpu_cases::reduce_integers();
  double exact = 0;
  for (float v : x.to_vector()) exact += v;
  const float got = gpu_sum(x.to(gtl::Device::cuda(0)), lab02::reduce_sum);
  gtl::judge::Outputs("ReduceFinal.IntegersSumExactly").record(got);
  EXPECT_EQ(got, static_cast<float>(exact)) << "TODO 1c: small integers sum exactly in float32";
}

#else

TEST(ReduceFinal, NeedsTheCudaBackend) {
  GTEST_SKIP() << "needs a CUDA GPU: " << gtl::cuda_unavailable_reason();
}

#endif  // GTL_WITH_CUDA

}  // namespace
