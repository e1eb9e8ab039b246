// Lab 10, TODO 5: your kernels for CausalSelfAttention's seam (gpt_attention.h) in the core's
// GPT, trained for two AdamW steps on the CUDA path against the same GPT on its reference path.
// The FlashAttention they call is the harness's (tests/flash_harness.h: TODOs 2 and 3's contract
// computed in double), so these checks grade TODO 5 alone. Built for a GPU (lab10_gpt_test,
// label gpu, skipped without one) and on the CPU emulator with the core's CUDA path emulated
// (lab10_gpt_emulated_test, label cpu).
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <optional>
#include <random>
#include <string>
#include <vector>

#include "bitwise_diff.h"
#include "gpt_steps.h"
#include "gtl/memory/caching_allocator.h"
#include "gtl/nn/precision.h"
#include "gtl/runtime/stream.h"
#include "gtl_judge_output.h"
#include "gtl_test.h"

#ifdef GTL_WITH_CUDA
#include "flash_harness.h"
#include "gpt_attention.h"
#endif
#ifdef GTL_EMULATED_CUDA
#include "cuda_emulator.h"  // emu::device_allocations
#endif

#ifdef GTL_WITH_CUDA

namespace {

using namespace gtl;
using namespace lab10_gpt_cases;

// What a run of kSteps training steps leaves behind, and what it asked of the harness.
struct TrainingRun : Steps {
  int64_t device_mallocs = 0;     // cudaMalloc calls during the run (emulator)
  int64_t allocator_mallocs = 0;  // the allocator's share of them
  cudaStream_t stream = nullptr;  // the stream the run's ops enqueued on
  std::vector<lab10_harness::Call> calls;
};

// Trains `c` for kSteps steps on `device`, under a StreamScope of its own stream on a GPU, with
// `kernels` on every block (nullptr: the reference path) and the caller's precision policy.
TrainingRun train(const GptCase& c, std::shared_ptr<const nn::AttentionKernels> kernels,
                  Device device = Device::cuda(0)) {
  lab10_harness::calls().clear();
  TrainingRun run;
  std::shared_ptr<Allocator> alloc =
      device.is_cuda() ? make_cuda_caching_allocator(0) : make_cpu_caching_allocator();
  AllocatorScope scope(alloc);
  std::optional<StreamScope> stream;
  if (device.is_cuda()) stream.emplace(Stream::create());
  run.stream = current_stream().handle();
#ifdef GTL_EMULATED_CUDA
  const uint64_t mallocs_before = emu::device_allocations();
#endif
  static_cast<Steps&>(run) = train_steps(c, kernels, device, *alloc);
#ifdef GTL_EMULATED_CUDA
  run.device_mallocs = static_cast<int64_t>(emu::device_allocations() - mallocs_before);
#endif
  run.allocator_mallocs = alloc->stats().num_system_allocs;
  run.calls = lab10_harness::calls();
  return run;
}

double relative_difference(const std::vector<float>& got, const std::vector<float>& want) {
  double diff = 0, norm = 0;
  for (size_t i = 0; i < want.size(); ++i) {
    diff += (double(got[i]) - want[i]) * (double(got[i]) - want[i]);
    norm += double(want[i]) * want[i];
  }
  return std::sqrt(diff) / std::max(std::sqrt(norm), 1e-30);
}

}  // namespace

TEST(FlashInTheGpt, TrainsLikeTheReferencePath) {
  GTL_REQUIRE_GPU();
  gtl::judge::Outputs recorded("FlashInTheGpt.TrainsLikeTheReferencePath");
  const std::shared_ptr<const nn::AttentionKernels> kernels = lab10::flash_attention_kernels();
  ASSERT_NE(kernels, nullptr) << "TODO 5: flash_attention_kernels() returned no kernels";
  for (const GptCase& c : cases("FlashInTheGpt")) {
    const std::string what = "TODO 5, " + describe(c) + ", " + gtl::test_seed::describe();
    const TrainingRun want = train(c, nullptr), got = train(c, kernels);
    const int64_t forwards = std::count_if(got.calls.begin(), got.calls.end(),
                                           [](const auto& call) { return !call.backward; });
    ASSERT_EQ(forwards, kSteps * c.layers)
        << what << ": your FlashAttention forward ran " << forwards << " times in " << kSteps
        << " steps of " << c.layers << " blocks; expected once per block and step (a call your "
        << "kernels can run was declined, or the backward ran the forward again)";
    ASSERT_EQ(static_cast<int64_t>(got.calls.size()), 2 * kSteps * c.layers)
        << what << ": expected one backward per forward";
    for (const lab10_harness::Call& call : got.calls) {
      const lab10::AttentionShape& s = call.shape;
      ASSERT_TRUE(s.bh == c.batch * c.heads && s.t == c.t && s.d == c.head_dim() && s.causal)
          << what << ": a " << (call.backward ? "backward" : "forward") << " was asked for bh "
          << s.bh << ", t " << s.t << ", d " << s.d << (s.causal ? ", causal" : ", not causal")
          << "; the layer's heads are bh " << c.batch * c.heads << ", t " << c.t << ", d "
          << c.head_dim() << ", causal (revisit what q's shape means)";
      ASSERT_EQ(call.stream, got.stream)
          << what << ": a " << (call.backward ? "backward" : "forward") << " was launched on "
          << "another stream than the one the core's ops on this thread use (the GPT runs under "
          << "a StreamScope): its work races the ops before and after it";
    }
    recorded.record_all(got.losses);
    for (int step = 0; step < kSteps; ++step) {
      EXPECT_LE(std::abs(got.losses[step] - want.losses[step]),
                kRelative * std::abs(want.losses[step]))
          << what << ": the loss of step " << step + 1 << " is " << got.losses[step]
          << " with your kernels, " << want.losses[step] << " on the reference path";
    }
    ASSERT_EQ(got.first_grads.size(), want.first_grads.size());
    for (size_t i = 0; i < want.first_grads.size(); ++i) {
      const double rel = relative_difference(got.first_grads[i], want.first_grads[i]);
      EXPECT_LE(rel, kRelative) << what << ": parameter " << i << "'s gradient differs from the "
                                << "reference path's by " << rel << " of its norm";
    }
    if (HasFailure()) return;
  }
}

// After the first forward, the step holds q, k, v and whatever your kernels kept, instead of the
// reference path's P [B*H, T, T], in every block; every buffer from the core's allocator.
TEST(FlashInTheGpt, HoldsWhatBackwardNeedsFromTheAllocator) {
  GTL_REQUIRE_GPU();
  gtl::judge::Outputs recorded("FlashInTheGpt.HoldsWhatBackwardNeedsFromTheAllocator");
  const std::shared_ptr<const nn::AttentionKernels> kernels = lab10::flash_attention_kernels();
  ASSERT_NE(kernels, nullptr) << "TODO 5: flash_attention_kernels() returned no kernels";
  for (const GptCase& c : cases("FlashInTheGptMemory")) {
    const std::string what = "TODO 5, " + describe(c) + ", " + gtl::test_seed::describe();
    const TrainingRun want = train(c, nullptr), got = train(c, kernels);
    const int64_t bh = c.batch * c.heads;
    const int64_t least = want.held_after_forward - c.layers * 4 * bh * c.t * c.t +
                          c.layers * (4 * bh * c.t * c.head_dim() + 4 * bh * c.t);
    recorded.record(got.held_after_forward);
    EXPECT_EQ(got.held_after_forward, least)
        << what << ": after the forward, the step holds " << got.held_after_forward
        << " bytes with your kernels; the reference path holds " << want.held_after_forward
        << ", and a recomputing backward that keeps what it needs, no more, from the core's "
        << "allocator, holds " << least << " (revisit what your backward reads that it cannot "
        << "recompute from q, k and v in one pass, and where its buffers come from)";
#ifdef GTL_EMULATED_CUDA
    EXPECT_EQ(got.device_mallocs - got.allocator_mallocs,
              want.device_mallocs - want.allocator_mallocs)
        << what << ": "
        << got.device_mallocs - got.allocator_mallocs - want.device_mallocs + want.allocator_mallocs
        << " cudaMalloc calls came from outside the core's allocator (its statistics, which "
        << "every memory figure of the course reads, do not see them)";
#endif
    if (HasFailure()) return;
  }
}

// Calls the kernels cannot run go to the reference path: the step is then the reference step
// bit for bit, and the harness is never called.
TEST(FlashInTheGpt, DeclinesWhatTheKernelsCannotRun) {
  GTL_REQUIRE_GPU();
  const std::shared_ptr<const nn::AttentionKernels> kernels = lab10::flash_attention_kernels();
  ASSERT_NE(kernels, nullptr) << "TODO 5: flash_attention_kernels() returned no kernels";
  struct Declined {
    GptCase gpt;
    Device device;
    bool bf16;
    const char* why;
  };
  const std::vector<Declined> all = {
      {{2, 2, 64, 7, 2, 16, 21}, Device::cuda(0), false, "heads of 32"},
      {{1, 2, 128, 5, 2, 16, 22}, Device::cuda(0), true, "bf16 heads (the compute dtype)"},
      {{1, 2, 128, 5, 2, 16, 23}, Device::cpu(), false, "a GPT on the CPU"},
  };
  for (const Declined& d : all) {
    const std::string what = std::string("TODO 5, ") + d.why + ", " + describe(d.gpt);
    std::optional<nn::PrecisionScope> policy;
    if (d.bf16) policy.emplace(nn::PrecisionPolicy::bf16());
    const TrainingRun want = train(d.gpt, nullptr, d.device);
    TrainingRun got;
    try {
      got = train(d.gpt, kernels, d.device);
    } catch (const std::exception& e) {
      FAIL() << what << ": the step failed with your kernels installed: " << e.what()
             << " (a call your kernels cannot run must be declined, not failed)";
    }
    EXPECT_TRUE(got.calls.empty())
        << what << ": your kernels called FlashAttention " << got.calls.size()
        << " times; TODOs 2 and 3 cannot run this (revisit what they accept)";
    for (int step = 0; step < kSteps; ++step) {
      EXPECT_EQ(gtl::testing::bitwise_diff({got.losses.at(step)}, {want.losses.at(step)}), "")
          << what << ": step " << step + 1 << "'s loss must be the reference path's";
    }
  }
}

// A failed launch is an error the caller sees, in the forward and in the backward.
TEST(FlashInTheGpt, KernelFailuresAreErrors) {
  GTL_REQUIRE_GPU();
  const std::shared_ptr<const nn::AttentionKernels> kernels = lab10::flash_attention_kernels();
  ASSERT_NE(kernels, nullptr) << "TODO 5: flash_attention_kernels() returned no kernels";
  const GptCase c{2, 2, 128, 6, 2, 16, 31};
  for (const int failing :
       {1, static_cast<int>(c.layers) + 1}) {  // block 2's forward, then block 2's backward
    const std::string what = std::string("TODO 5, the ") +
                             (failing > c.layers ? "backward" : "forward") +
                             " of block 2 failing with cudaErrorInvalidConfiguration";
    lab10_harness::fail_call(failing, cudaErrorInvalidConfiguration);
    try {
      train(c, kernels);
      ADD_FAILURE() << what << ": the step went on as if nothing had happened";
    } catch (const Error& e) {
      const std::string message = e.what();
      EXPECT_TRUE(
          message.find(cudaGetErrorName(cudaErrorInvalidConfiguration)) != std::string::npos ||
          message.find(cudaGetErrorString(cudaErrorInvalidConfiguration)) != std::string::npos)
          << what << ": the error must name the CUDA error; it says: " << message;
    } catch (const std::exception& e) {
      ADD_FAILURE() << what << ": expected a gtl::Error naming the CUDA error, got: " << e.what();
    }
    lab10_harness::fail_call(-1, cudaSuccess);
  }
}

#else

TEST(FlashInTheGpt, NeedsTheCudaBackend) {
  GTEST_SKIP() << "needs a CUDA GPU: " << gtl::cuda_unavailable_reason();
}

#endif  // GTL_WITH_CUDA
