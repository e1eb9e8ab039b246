// The sequence-parallel MLP's shards (tensor_parallel.h, SequenceParallelMLP): fc1's rows and
// fc2's columns as in step 1, the LayerNorm and fc2's bias whole on every rank. Its forward and
// backward are TODO 4b (sequence_parallel.cpp).
#include "gtl/runtime/error.h"
#include "tensor_parallel.h"

namespace lab08 {

SequenceParallelMLP::SequenceParallelMLP(const nn::ResidualMLP& full, Communicator& tp)
    : Module("sequence_parallel_mlp"), tp_(tp), dim_(0) {
  const std::vector<nn::ParamRef> p = full.parameters();  // ln, fc1, fc2: weight, bias each
  GTL_CHECK(p.size() == 6,
            "SequenceParallelMLP: expected the 6 parameters of a ResidualMLP, got " << p.size());
  dim_ = p[0].value.size(0);
  const int64_t hidden = p[2].value.size(0);
  const Slice cols = tp_slice(hidden, tp.rank(), tp.world_size(), "hidden features");
  Tensor fc2 = Tensor::empty({dim_, cols.size()});
  const float* src = p[4].value.data<float>();
  float* dst = fc2.data<float>();
  for (int64_t i = 0; i < dim_; ++i)
    for (int64_t j = cols.begin; j < cols.end; ++j) *dst++ = src[i * hidden + j];
  add_parameter("ln.weight", p[0].value.clone());
  add_parameter("ln.bias", p[1].value.clone());
  add_parameter("fc1.weight", p[2].value.slice(cols.begin, cols.end).clone());
  add_parameter("fc1.bias", p[3].value.slice(cols.begin, cols.end).clone());
  add_parameter("fc2.weight", fc2);
  add_parameter("fc2.bias", p[5].value.clone());
}

}  // namespace lab08
