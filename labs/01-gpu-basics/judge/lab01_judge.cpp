// The judge of lab 01 (docs/grader.md, "The judge"): built from the course alone (the lab's test
// cases, the core), never from the student's files. gtl-grade runs `lab01_judge <check>` after
// the check's tests; each case below reads what those tests recorded (gtl_judge_output.h) for the
// inputs the grading seed drew, recomputes it and accepts (exit 0) or rejects with one line.
//
// Results the tests require bit for bit (sums of two floats, a scaled copy, device names) are
// recomputed exactly and compared by digest. Timings and bandwidths cannot be recomputed: their
// cases check the physical relations the tests assert on the recorded figures.
#include <cmath>
#include <limits>
#include <string>
#include <vector>

#include "gtl/runtime/device.h"
#include "gtl_judge.h"
#include "lab01_cases.h"

#ifdef GTL_WITH_CUDA
#include <cuda_runtime.h>
#endif

namespace {

using gtl::judge::Recorded;
using gtl::judge::Rejection;

std::vector<float> sum_of(const std::vector<float>& a, const std::vector<float>& b, int64_t from,
                          int64_t n) {
  std::vector<float> c(n);
  for (int64_t i = 0; i < n; ++i) c[i] = a[from + i] + b[from + i];
  return c;
}

std::string choose_device() {
  Recorded autod("ChooseDevice.AutoPicksTheGpuWhenThereIsOneElseTheCpu");
  const std::string want =
      (gtl::cuda_available() ? gtl::Device::cuda(0) : gtl::Device::cpu()).str();
  gtl::judge::expect_equal(autod.next<std::string>("choose_device(\"auto\")"), want,
                           "choose_device(\"auto\")");
  Recorded missing("ChooseDevice.AMissingGpuIsAnErrorThatSaysHowManyExist");
  const int count = gtl::cuda_device_count();
  const std::string expected =
      "cuda:" + std::to_string(count + 1 + lab01_cases::missing_gpu_distance()) +
      " requested but only " + std::to_string(count) + " GPU";
  const std::string message = missing.line("the error of a missing GPU");
  if (message.find(expected) == std::string::npos)
    throw Rejection("choose_device's error for a missing GPU is \"" + message +
                    "\", which does not contain \"" + expected + "\"");
  return "\"auto\" chose " + want + "; the missing GPU's error names it";
}

std::string error_checking() {
#ifdef GTL_WITH_CUDA
  Recorded r("CheckCuda.AnErrorNamesTheCallThePlaceAndTheError");
  const int line = r.next<int>("the line of the failing call");
  const std::string want = "cudaErrorInvalidValue failed at cpu_test.cpp:" + std::to_string(line) +
                           ": cudaErrorInvalidValue: " + cudaGetErrorString(cudaErrorInvalidValue);
  gtl::judge::expect_equal(r.line("check_cuda's message"), want, "check_cuda's message");
  return "check_cuda's message is exact";
#else
  throw Rejection("this judge was built without CUDA: it cannot judge the error checker");
#endif
}

std::string vector_add_cpu() {
  Recorded r("VectorAddCpu.SeededSizesAndAlignments");
  int round = 0;
  for (const auto& [n, offset, a, b] : lab01_cases::seeded_vector_add_rounds())
    r.expect_digest(sum_of(a, b, offset, n), "c of round " + std::to_string(round++) +
                                                 " (n = " + std::to_string(n) + ", offset " +
                                                 std::to_string(offset) + ")");
  return "all " + std::to_string(round) + " seeded sums exact";
}

std::string vector_add_emulated() {
  Recorded r("EmulatedVectorAdd.KernelCoversAnyN");
  for (int64_t n : lab01_cases::emulated_vector_add_sizes()) {
    std::vector<float> c = sum_of(lab01_cases::ramp(n, 0.5f), lab01_cases::ramp(n, -0.25f), 0, n);
    c.push_back(std::numeric_limits<float>::quiet_NaN());  // the guard element: never written
    r.expect_digest(c, "c for n = " + std::to_string(n) + " (its guard element included)");
  }
  Recorded trip("EmulatedVectorAdd.RoundTripThroughDeviceMemory");
  for (int64_t n : {int64_t{0}, int64_t{1}, int64_t{1000}, int64_t{100003}})
    trip.expect_digest(sum_of(lab01_cases::ramp(n, 2.f), lab01_cases::ramp(n, 1.f), 0, n),
                       "c of the round trip for n = " + std::to_string(n));
  return "every kernel result exact";
}

std::vector<float> scaled(const std::vector<float>& in, float alpha) {
  std::vector<float> out(in.size());
  for (size_t i = 0; i < in.size(); ++i) out[i] = alpha * in[i];
  return out;
}

std::string stream_pipeline_emulated() {
  Recorded r("EmulatedStreamPipeline.ChunksCoverEveryElementOnce");
  for (const auto& [n, chunks] : lab01_cases::emulated_pipeline_cases())
    r.expect_digest(scaled(lab01_cases::ramp(n, 1.5f), 3.f),
                    "out for n = " + std::to_string(n) + ", " + std::to_string(chunks) + " chunks");
  return "every chunking exact";
}

std::string describe_device() {
  const std::string line = Recorded("DescribeDevice.NamesTheGpuAndItsResources").line("the line");
  const gtl::DeviceProperties p = gtl::device_properties(0);
  for (const std::string& part :
       {p.name + ": ", std::to_string(p.multiprocessors) + " SMs",
        "sm_" + std::to_string(p.compute_major) + std::to_string(p.compute_minor)})
    if (line.find(part) == std::string::npos)
      throw Rejection("describe_device(0) gave \"" + line + "\", which lacks \"" + part + "\"");
  return "\"" + line + "\"";
}

std::string vector_add_gpu() {
  Recorded r("VectorAddGpu.MatchesTheCpuOnEverySize");
  for (int64_t n : lab01_cases::gpu_vector_add_sizes())
    r.expect_digest(
        sum_of(lab01_cases::random_vector(n, 1), lab01_cases::random_vector(n, 2), 0, n),
        "c for n = " + std::to_string(n));
  const int64_t n = lab01_cases::kGridStrideN;
  std::vector<float> c =
      sum_of(lab01_cases::random_vector(n, 3), lab01_cases::random_vector(n, 4), 0, n);
  c.resize(n + lab01_cases::kGridStridePad, 12345.f);  // the sentinels past n stay untouched
  Recorded("VectorAddDevice.GridStrideLoopCoversLargeArraysAndStopsAtN")
      .expect_digest(c, "c (and the sentinels past n) for n = " + std::to_string(n));
  return "every sum exact, nothing written past n";
}

std::string event_timing() {
  Recorded r("EventTiming.AHostTimerWithoutSyncMeasuresOnlyTheLaunches");
  const double without = r.next<double>("host_ms_without_sync");
  const double with = r.next<double>("host_ms_with_sync");
  const double events = r.next<double>("event_ms");
  if (!(events > 0 && std::isfinite(with) && with > 0 && without < 0.5 * events &&
        with >= 0.9 * events))
    throw Rejection("the recorded timings (without sync " + gtl::judge::show(without) +
                    " ms, with sync " + gtl::judge::show(with) + " ms, events " +
                    gtl::judge::show(events) +
                    " ms) break the relations of host and device clocks");
  return "timings consistent";
}

std::string transfer_bandwidth() {
#ifdef GTL_WITH_CUDA
  Recorded memory("HostMemory.PinnedIsPageLockedAndPageableIsNot");
  gtl::judge::expect_equal(memory.next<int>("pinned memory's type"), int(cudaMemoryTypeHost),
                           "the memory type of allocate_host(pinned)");
  gtl::judge::expect_equal(memory.next<int>("pageable memory's type"),
                           int(cudaMemoryTypeUnregistered),
                           "the memory type of allocate_host(pageable)");
#endif
  Recorded r("TransferBandwidth.EveryDirectionGivesAPhysicalNumber");
  const double hbm = gtl::device_properties(0).peak_memory_bandwidth_gbs();
  for (int i = 0; i < 4; ++i) {
    const double gbs = r.next<double>("bandwidth " + std::to_string(i));
    if (!(std::isfinite(gbs) && gbs > 0.1 && gbs < hbm))
      throw Rejection("a recorded bandwidth of " + gtl::judge::show(gbs) +
                      " GB/s is not physical on this GPU (0.1 to " + gtl::judge::show(hbm) + ")");
  }
  return "bandwidths physical";
}

std::string stream_pipeline() {
  Recorded r("StreamPipeline.GivesExactlyTheSerialResult");
  for (const auto& [n, chunks] : lab01_cases::gpu_pipeline_cases())
    r.expect_digest(scaled(lab01_cases::random_vector(n, 5), 3.f),
                    "out for n = " + std::to_string(n) + ", " + std::to_string(chunks) + " chunks");
  return "every chunking exact";
}

}  // namespace

int main(int argc, char** argv) {
  return gtl::judge::run(argc, argv,
                         {{"choose-device", choose_device},
                          {"error-checking", error_checking},
                          {"vector-add-cpu", vector_add_cpu},
                          {"vector-add-emulated", vector_add_emulated},
                          {"stream-pipeline-emulated", stream_pipeline_emulated},
                          {"describe-device", describe_device},
                          {"vector-add", vector_add_gpu},
                          {"event-timing", event_timing},
                          {"transfer-bandwidth", transfer_bandwidth},
                          {"stream-pipeline", stream_pipeline}});
}
