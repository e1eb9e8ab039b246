// TODO 1c on the CPU emulator: your reduce_sum (reduce.cu) built with the reference block
// reduction (tests/reference/block_reduce.cuh, the core's) in place of yours, so that this check
// says whether 1c is right whatever the state of 1b (kernels_emulated_test.cpp tests 1b itself).
#include <gtest/gtest.h>

#include "kernels.h"
#include "reduce_check.h"

namespace {

TEST(EmulatedReduceFinal, SeveralElementsPerThread) {
  expect_reduces_every_case("EmulatedReduceFinal.SeveralElementsPerThread",
                            "TODO 1c several elements per thread", lab02::reduce_sum,
                            "a float4 path taken for a misaligned input, or the n % 4 tail "
                            "skipped");
}

}  // namespace
