# GEMM, convolution and pooling ops of the training core (the second half of gtl/ops; the
# elementwise, reduction and normalisation ops are listed in sources.cmake beside this file).
gtl_core_sources(
  CPU gtl/ops/math_mode.cpp gtl/ops/matmul.cpp gtl/ops/conv2d.cpp gtl/ops/pool2d.cpp
  CUDA gtl/ops/matmul.cu gtl/ops/conv2d.cu gtl/ops/pool2d.cu)
