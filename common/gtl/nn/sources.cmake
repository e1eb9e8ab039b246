# gtl::nn: layers with explicit forward and backward, the flat parameter buffer, the sharded
# flat parameter (FSDP), precision policy.
gtl_core_sources(
  CPU gtl/nn/module.cpp gtl/nn/precision.cpp gtl/nn/parameter_buffer.cpp
      gtl/nn/flat_parameter.cpp gtl/nn/linear.cpp
      gtl/nn/activation.cpp gtl/nn/layernorm.cpp gtl/nn/residual_mlp.cpp gtl/nn/conv2d.cpp
      gtl/nn/max_pool2d.cpp gtl/nn/flatten.cpp gtl/nn/sequential.cpp
      gtl/nn/activation_checkpoint.cpp gtl/nn/cross_entropy.cpp gtl/nn/models.cpp
      gtl/nn/token_embedding.cpp gtl/nn/position_embedding.cpp gtl/nn/kv_cache.cpp
      gtl/nn/causal_self_attention.cpp gtl/nn/attention_kernels.cpp
      gtl/nn/gpt_block.cpp gtl/nn/gpt.cpp gtl/nn/gpt_stage.cpp gtl/nn/tied_head.cpp
      gtl/nn/parallel_linear.cpp gtl/nn/vocab_parallel.cpp gtl/nn/tensor_parallel.cpp
      gtl/nn/generate.cpp
      gtl/nn/profiler.cpp)
# profiler.cpp writes the Chrome trace format with nlohmann-json (not part of the public headers).
target_link_libraries(gtl_core PRIVATE nlohmann_json::nlohmann_json)
