// The runtime guard's scopes for lab 08's tests (grader/channel/gtl_reference_guard.h,
// docs/grader.md "Trust model"): while a test calls into a student TODO it holds the scope of that
// TODO, and every core reference the scope names refuses to run, however the student's code
// reached it (a direct call, a function pointer, a helper in another file).
//
// The lists are the rubric's `forbidden:` entries, all of them: TODOs 1, 2 and 4's (the core's
// tensor-parallel layers), TODO 3's (the core's loss, lookup and all-gather, and its
// vocabulary-parallel ones), TODO 5's (the ProcessGrid) and TODO 6's (the simulator). The tests
// compute what they compare with (the core's cross-entropy and embedding, the ProcessGrid's groups,
// the simulated figures) outside every scope. The scopes are process-wide: with in-process ranks, a
// rank that builds a ProcessGrid after its TODO 5 scope first passes a barrier, so that no other
// rank is still inside its own.
#pragma once

#include "gtl_reference_guard.h"

namespace lab08_student_call {

using gtl::grading::StudentCall;

// TODO 1, the column- and row-parallel layers: the core's tensor-parallel GPT has its own.
inline StudentCall todo1() {
  return StudentCall("ColumnParallelLinear / RowParallelLinear (TODO 1, parallel_linear.cpp)",
                     {"gtl::nn::ParallelLinear", "gtl::nn::tensor_parallel::"});
}
// TODO 2, shard_attention: the core cuts a whole block's attention into a rank's heads.
inline StudentCall todo2() {
  return StudentCall("shard_attention (TODO 2, attention_shard.cpp)",
                     {"gtl::nn::tensor_parallel::"});
}
// TODO 4, the sequence-parallel pair and MLP: its column and row layers are TODO 1's; the
// core's sequence-parallel layers are what it builds.
inline StudentCall todo4() {
  return StudentCall(
      "gather_sequence / scatter_sequence / SequenceParallelMLP (TODO 4, "
      "sequence_parallel.cpp)",
      {"gtl::nn::ParallelLinear",
       "gtl::nn::tensor_parallel::", "gtl::nn::LayerNorm::set_sequence_parallel"});
}
// TODO 3, VocabParallelEmbedding and VocabParallelCrossEntropy: the core's loss and lookup work
// on the full logits and the full table, and an all-gather is how the full logits would be built.
inline StudentCall todo3() {
  return StudentCall(
      "VocabParallelEmbedding / VocabParallelCrossEntropy (TODO 3, vocab_parallel.cpp)",
      {"gtl::ops::cross_entropy", "gtl::ops::cross_entropy_backward", "gtl::nn::CrossEntropyLoss",
       "gtl::ops::embedding", "gtl::ops::embedding_backward", "gtl::dist::Communicator::all_gather",
       "gtl::nn::VocabParallel", "gtl::nn::tensor_parallel::"});
}
// TODO 5, make_dp_tp_groups and finalize_gradients: the core's ProcessGrid builds its groups.
inline StudentCall todo5() {
  return StudentCall("make_dp_tp_groups / finalize_gradients (TODO 5, data_tensor_parallel.cpp)",
                     {"gtl::dist::ProcessGrid"});
}
// TODO 6, tp_step_figures and largest_tp_size: the core's simulator gives the figures.
inline StudentCall todo6() {
  return StudentCall("tp_step_figures / largest_tp_size (TODO 6, tp_placement.cpp)",
                     {"gtl::dist::simulate_timeline"});
}

}  // namespace lab08_student_call
