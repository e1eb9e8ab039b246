#include "gtl_test.h"
TEST(Tensor, Placeholder) { EXPECT_EQ(gtl::Tensor::zeros({2, 3}).numel(), 6); }
