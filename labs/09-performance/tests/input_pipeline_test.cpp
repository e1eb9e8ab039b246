// Lab 09, TODO 3: the input pipeline on the harness's virtual clock (input_pipeline.h), on the CPU
// and, where the core has a CUDA device (the CPU emulator's H100, or a GPU), on it too. Exact: the
// batches in order bit for bit, no host synchronisation in next(), the number of steps that waited
// for data and the most batches in flight, and an error at the batch that threw. The judge
// (judge/lab09_pipeline_judge.cpp) recomputes the counts of every case with its own model.
// Built with LAB09_PIPELINE_GPU (lab09_pipeline_gpu_test) every test needs a GPU and runs on it
// only.
#include <gtest/gtest.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <future>
#include <string>
#include <vector>

#include "gtl/runtime/device.h"
#include "gtl_judge_output.h"
#include "gtl_reference_guard.h"
#include "gtl_test.h"
#include "input_pipeline.h"
#include "lab09_pipeline_cases.h"

namespace {

using lab09_pipeline_cases::PipelineCase;

std::vector<gtl::Device> devices() {
#ifdef LAB09_PIPELINE_GPU
  return {gtl::Device::cuda(0)};
#else
  if (gtl::cuda_available()) return {gtl::Device::cpu(), gtl::Device::cuda(0)};
  return {gtl::Device::cpu()};
#endif
}

#ifdef LAB09_PIPELINE_GPU
#define LAB09_REQUIRE_DEVICE() GTL_REQUIRE_GPU()
#else
#define LAB09_REQUIRE_DEVICE() (void)0
#endif

// One case on `device`: the pipeline made, run and destroyed by the harness's loop, inside the
// student's scope (the core's DataLoader is TODO 3's reference: it may not run there). A run that
// does not end within two minutes (a destructor or a next() that hangs) ends the program.
lab09::RunResult run(const PipelineCase& c, gtl::Device device) {
  const auto dataset =
      std::make_shared<lab09::SlowDataset>(c.data, std::make_shared<lab09::VirtualClock>());
  const lab09::PipelineOptions options{c.workers, c.depth, device};
  auto result = std::async(std::launch::async, [&] {
    const gtl::grading::StudentCall call("InputPipeline (TODO 3, input_pipeline.cpp)",
                                         {"gtl::data::DataLoader::"});
    return lab09::run_pipeline(dataset, options, c.run, [&] {
      return std::make_unique<lab09::InputPipeline>(dataset, options);
    });
  });
  if (result.wait_for(std::chrono::minutes(2)) != std::future_status::ready) {
    std::fprintf(stderr,
                 "%s on %s: the run did not end within two minutes: a next() that waits for a "
                 "batch no worker will load, or a destructor that does not wake and join every "
                 "worker (TODO 3, errors and shutdown)\n",
                 lab09_pipeline_cases::describe(c).c_str(), device.str().c_str());
    std::_Exit(1);
  }
  return result.get();
}

std::string where(const PipelineCase& c, gtl::Device device) {
  return lab09_pipeline_cases::describe(c) + " on " + device.str();
}

void expect_clean(const lab09::RunResult& r, const std::string& who) {
  for (const std::string& e : r.errors) ADD_FAILURE() << who << ": " << e << " (TODO 3, order)";
  EXPECT_EQ(r.threw_at, -1) << who << ": next() threw at step " << r.threw_at << ": " << r.thrown
                            << " (TODO 3)";
}

void record_counts(gtl::judge::Outputs& out, const lab09::RunResult& r) {
  out.record(r.steps);
  out.record(r.waits);
  out.record_all(r.waited_steps);
  out.record(r.max_in_flight);
  out.record(r.ticks);
}

TEST(InputPipeline, ReturnsEveryBatchInOrderBitwiseWithoutHostSyncs) {
  LAB09_REQUIRE_DEVICE();
  gtl::judge::Outputs out("InputPipeline.ReturnsEveryBatchInOrderBitwiseWithoutHostSyncs");
  out.record(devices().size());
  for (const gtl::Device device : devices())
    for (const PipelineCase& c : lab09_pipeline_cases::seeded_cases("InputPipeline.Order", 4)) {
      const lab09::RunResult r = run(c, device);
      const std::string who = where(c, device);
      out.record(r.steps);
      out.record_digest(r.seen.data(), r.seen.size());
      out.record(r.host_syncs);
      expect_clean(r, who);
      EXPECT_EQ(r.steps, c.run.epochs * c.data.batches)
          << who << ": every batch of every epoch, then std::nullopt once (TODO 3)";
      EXPECT_EQ(r.host_syncs, 0)
          << who << ": next() and PipelineBatch::wait() made the host wait for the GPU "
          << r.host_syncs
          << " times; a batch's copy is waited for by the consumer's stream (PipelineBatch::wait, "
          << "an event), never by the host (TODO 3, pinned staging and the copy stream)";
    }
}

TEST(InputPipeline, WorkedCasesWaitAsTheHandoutDerives) {
  LAB09_REQUIRE_DEVICE();
  gtl::judge::Outputs out("InputPipeline.WorkedCasesWaitAsTheHandoutDerives");
  out.record(devices().size());
  for (const gtl::Device device : devices())
    for (const lab09_pipeline_cases::Worked& w : lab09_pipeline_cases::worked_cases()) {
      const lab09::RunResult r = run(w.c, device);
      const std::string who = where(w.c, device);
      record_counts(out, r);
      expect_clean(r, who);
      EXPECT_EQ(r.late, "") << who << ": a load started later than a free worker and a free "
                            << "slot allow (TODO 3, workers and depth)";
      EXPECT_LE(r.max_in_flight, w.c.depth)
          << who << ": more batches in flight than the depth (TODO 3, where the bound of D is "
          << "enforced)";
      EXPECT_EQ(r.waits, w.waits) << who << ": expected " << w.waits
                                  << " steps that waited for their batch, counted " << r.waits
                                  << " (" << r.ticks
                                  << " ticks in all); the handout derives the count "
                                  << "(TODO 3, the wait count)";
    }
}

TEST(InputPipeline, SeededCasesWaitExactly) {
  LAB09_REQUIRE_DEVICE();
  gtl::judge::Outputs out("InputPipeline.SeededCasesWaitExactly");
  out.record(devices().size());
  for (const gtl::Device device : devices())
    for (const PipelineCase& c : lab09_pipeline_cases::seeded_cases("InputPipeline.Waits", 6)) {
      const lab09::RunResult r = run(c, device);
      const std::string who = where(c, device);
      record_counts(out, r);
      expect_clean(r, who);
      EXPECT_EQ(r.late, "") << who << ": a load started later than a free worker and a free "
                            << "slot allow (TODO 3, workers and depth)";
      EXPECT_LE(r.max_in_flight, c.depth)
          << who << ": more batches in flight than the depth (TODO 3, where the bound of D is "
          << "enforced)";
    }
}

TEST(InputPipeline, AnErrorReachesTheConsumerAtItsBatch) {
  LAB09_REQUIRE_DEVICE();
  gtl::judge::Outputs out("InputPipeline.AnErrorReachesTheConsumerAtItsBatch");
  out.record(devices().size());
  const PipelineCase c = lab09_pipeline_cases::error_case();
  for (const gtl::Device device : devices()) {
    const lab09::RunResult r = run(c, device);
    const std::string who = where(c, device);
    out.record(r.threw_at);
    out.record_digest(r.seen.data(), r.seen.size());
    for (const std::string& e : r.errors) ADD_FAILURE() << who << ": " << e << " (TODO 3, order)";
    EXPECT_EQ(r.threw_at, c.data.fail_at)
        << who << ": the load of batch " << c.data.fail_at << " throws; expected next() to "
        << "return every batch before it and rethrow at step " << c.data.fail_at << ", got "
        << (r.threw_at < 0 ? std::string("no exception")
                           : "one at step " + std::to_string(r.threw_at))
        << " (TODO 3, errors reach the consumer)";
    const std::string want = "batch " + std::to_string(c.data.fail_at) + " is corrupt";
    EXPECT_NE(r.thrown.find(want), std::string::npos)
        << who << ": expected the data set's own exception (\"" << want << "\"), got \"" << r.thrown
        << "\" (TODO 3, errors reach the consumer)";
  }
}

}  // namespace
