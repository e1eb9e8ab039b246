// Lab 10, TODO 5's harness: flash_attention_forward and flash_attention_backward as attention.h
// states them, computed in double on the host (the device buffers copied over on the stream the
// call names), so that TODO 5's checks grade the plugging-in alone, whatever the state of TODOs 2
// and 3. It refuses what the real kernels refuse (a head dimension other than 64 or 128:
// cudaErrorInvalidValue, nothing written) and records every call, for the tests to check what
// the seam's kernels asked for.
#pragma once

#include <cuda_runtime.h>

#include <vector>

#include "attention.h"

namespace lab10_harness {

struct Call {
  bool backward = false;
  lab10::AttentionShape shape;
  cudaStream_t stream = nullptr;
};

// Every call since the last clear, in order.
std::vector<Call>& calls();
// The call `calls_from_now` calls from now (0: the next one) returns `error` and does nothing
// else (a failed launch).
void fail_call(int calls_from_now, cudaError_t error);

}  // namespace lab10_harness
