// Lab 10, TODO 5: your FlashAttention inside the core's GPT.
//
// This header is part of the pristine lab (labs/10-attention/include): do not edit it. Your file
// is starter/10-attention/gpt_attention.cpp; its map to tests and checks is in the handout.
//
// nn::CausalSelfAttention has a seam (common/gtl/nn/attention_kernels.h: read its contract): a
// set of kernels may run the attention core of its training path, forward and backward, instead
// of the reference path, which keeps the B*H x T x T probabilities for backward. Installed with
//
//   nn::use_attention_kernels(gpt, lab10::flash_attention_kernels());
//
// every block's attention then calls yours. What they must do:
//   - run every call that TODO 2's and TODO 3's kernels can run, and decline every other one
//     (the layer then runs its reference path): never fail a call the reference path could run;
//   - work where the core's ops work: on the stream the core's ops on this thread enqueue on,
//     without waiting for the GPU, with every buffer from the core's allocator;
//   - keep for backward what your backward needs and nothing more, and run your forward once
//     per layer and step (the checks count a step's bytes and your kernels' calls);
//   - report a kernel's failure as a gtl::Error naming the CUDA error, never as wrong numbers.
#pragma once

#include <memory>

#include "gtl/nn/attention_kernels.h"

namespace lab10 {

// ---- 5. Plug it in (gpt_attention.cpp) --------------------------------------------------------
std::shared_ptr<const gtl::nn::AttentionKernels> flash_attention_kernels();  // TODO 5

}  // namespace lab10
