# Ops of the training core, one concept per file: the CPU path and dispatch in name.cpp, the
# CUDA path in name.cu (compiled only with the CUDA backend), its launcher declared in
# detail/name_cuda.h.
gtl_core_sources(
  CPU gtl/ops/elementwise.cpp gtl/ops/activations.cpp gtl/ops/reduce.cpp gtl/ops/softmax.cpp
      gtl/ops/cross_entropy.cpp gtl/ops/layernorm.cpp gtl/ops/math_mode.cpp gtl/ops/matmul.cpp
      gtl/ops/conv2d.cpp gtl/ops/pool2d.cpp gtl/ops/global_norm.cpp gtl/ops/non_finite.cpp
      gtl/ops/permute.cpp gtl/ops/causal_mask.cpp gtl/ops/embedding.cpp
  CUDA gtl/ops/elementwise.cu gtl/ops/activations.cu gtl/ops/reduce.cu gtl/ops/softmax.cu
       gtl/ops/cross_entropy.cu gtl/ops/layernorm.cu gtl/ops/matmul.cu gtl/ops/conv2d.cu
       gtl/ops/pool2d.cu gtl/ops/global_norm.cu gtl/ops/non_finite.cu gtl/ops/permute.cu
       gtl/ops/causal_mask.cu gtl/ops/embedding.cu)
