# Ops of the training core, one concept per file: the CPU path and dispatch in name.cpp, the
# CUDA path in name.cu (compiled only with the CUDA backend).
gtl_core_sources(
  CPU gtl/ops/elementwise.cpp gtl/ops/activations.cpp gtl/ops/reduce.cpp gtl/ops/softmax.cpp
      gtl/ops/cross_entropy.cpp gtl/ops/layernorm.cpp
  CUDA gtl/ops/elementwise.cu gtl/ops/activations.cu gtl/ops/reduce.cu gtl/ops/softmax.cu
       gtl/ops/cross_entropy.cu gtl/ops/layernorm.cu)
