// TODO 5: the executor. It runs the harness's GPipe and the tests' own orders (lab07_schedules.h),
// so these checks do not depend on TODO 4, and checks the systems properties exactly: the
// pipelined step equals the sequential one bit for bit; each stage sends exactly its activations
// and gradients, with send_recv where it meets the same neighbour both ways; a blocking executor
// deadlocks where yours must not; and the activations a stage holds follow the schedule (GPipe m
// micro-batches, the serial order one), from each rank's own allocator.
#include <gtest/gtest.h>

#include <algorithm>
#include <functional>
#include <iostream>
#include <memory>
#include <mutex>
#include <stdexcept>

#include "bitwise_diff.h"
#include "gtl/distributed/in_process.h"
#include "gtl/memory/allocator.h"
#include "gtl/nn/models.h"
#include "gtl/nn/parameter_buffer.h"
#include "gtl_judge_output.h"
#include "gtl_test_seed.h"
#include "lab07_cases.h"
#include "lab07_schedules.h"
#include "lab07_student_call.h"
#include "pipeline.h"
#include "pipeline_training.h"

namespace lab07 {
namespace {

namespace nn = gtl::nn;
namespace dist = gtl::dist;

// A healthy step takes milliseconds; a stuck one is reported after 3 s (a deadlock in rendezvous
// mode is found by its timeout: both ranks wait in a send no receive will ever meet).
dist::RunOptions fast() {
  dist::RunOptions o;
  o.timeout = std::chrono::seconds(3);
  return o;
}

// run_ranks, with the lesson first when the stages deadlock.
void run_stages(int p, const std::function<void(Communicator&)>& body,
                const dist::RunOptions& options = fast()) {
  try {
    dist::run_ranks(p, body, options);
  } catch (const dist::DistError& e) {
    if (std::string(e.what()).find("deadlock") == std::string::npos) throw;
    throw std::runtime_error(
        "your executor deadlocked. The communicator said: " + std::string(e.what()) +
        "\nA rank stuck in a SEND: its neighbour was not receiving; two neighbours that both send "
        "first wait for each other (revisit the 1F1B steady state, "
        "Executor.ABlockingExecutorDeadlocksInTheSteadyStateYoursDoesNot). A rank stuck in a "
        "RECV: the message it waits for is never sent, or only after its sender's own receive "
        "(revisit which outputs a stage passes on, its last one included, and in what order two "
        "neighbours post their halves).");
  }
}

using gtl::testing::bitwise_diff;  // bitwise_diff.h

// Every stage's loss and gradients go to the judge, which recomputes the sequential step.
// The bytes stage s sends (and receives) in one step: every row of the batch crosses each of its
// boundaries once forward (activations to s+1) and once backward (input gradients to s-1), 4
// bytes per float.
int64_t stage_bytes(const PipelineConfig& config, int s, int p) {
  const auto width = [&](int b) {
    return gtl::shape_numel(
        boundary_sample_shape(config.model, config.boundaries[static_cast<std::size_t>(b)]));
  };
  return config.batch * ((s + 1 < p ? width(s + 1) : 0) + (s > 0 ? width(s) : 0)) * 4;
}

// What the gradients of a stage hold before a step: a previous step's, never zeroed (a training
// loop does not zero them between steps: the first backward of a step overwrites them).
constexpr float kStaleGradient = 1e3f;

// Rank comm.rank()'s stage of two pipelined steps of `config` on the SAME layers, the way a
// training loop runs them (pipeline_step builds fresh layers with zero gradients, and a stage whose
// first backward accumulates would pass there): the gradients start at kStaleGradient, then
// run_stage runs twice, each step's loss and gradients kept. With no optimizer step between them,
// both steps are the sequential step bit for bit. The bytes the stage sent and received in each
// step come back in `bytes` (sent, received).
std::vector<StageResult> two_steps_from_stale_gradients(
    Communicator& comm, const PipelineConfig& config, const StageSchedule& actions,
    std::vector<std::pair<int64_t, int64_t>>& bytes) {
  const auto s = static_cast<std::size_t>(comm.rank());
  std::unique_ptr<nn::Sequential> layers =
      nn::make_stage(config.model, config.boundaries[s], config.boundaries[s + 1]);
  nn::ParameterBuffer buffer(*layers, config.device);
  Tensor grads = buffer.grads();  // a view of the buffer's flat gradient
  grads.fill_(kStaleGradient);
  const StageStep step = harness_stage_step(config, comm.rank(), actions, *layers);
  std::vector<StageResult> results(2);
  for (StageResult& result : results) {
    comm.reset_counters();
    {
      // TODO 5's scope (lab07_student_call.h); nothing a rank runs before it is a reference the
      // scope forbids, and the sequential step is computed after the ranks have joined.
      const auto call = lab07_student_call::todo5();
      result.loss = run_stage(comm, step);
    }
    for (const nn::ParamRef& param : layers->parameters()) {
      result.grads[param.name] = param.grad.to(gtl::Device::cpu()).to_vector();
    }
    const dist::OpCounters all = comm.total_counters();
    bytes.emplace_back(all.bytes_sent, all.bytes_received);
  }
  return results;
}

void expect_equals_sequential(const std::string& name, const Schedule& schedule,
                              const PipelineConfig& config, gtl::judge::Outputs& recorded) {
  const int p = static_cast<int>(config.boundaries.size()) - 1;
  const int64_t m = config.micro_batches;
  // steps[k][s]: stage s's result of step k.
  std::vector<std::vector<StageResult>> steps(2, std::vector<StageResult>(std::size_t(p)));
  run_stages(
      p,
      [&](Communicator& comm) {
        const auto s = static_cast<std::size_t>(comm.rank());
        std::vector<std::pair<int64_t, int64_t>> bytes;
        const std::vector<StageResult> both =
            two_steps_from_stale_gradients(comm, config, schedule[s], bytes);
        for (std::size_t k = 0; k < both.size(); ++k) steps[k][s] = both[k];
        // The communication itself (stages are threads, so activations and
        // gradients could be read from a neighbour's memory through a global): every boundary
        // crossed through the communicator, stage_bytes each way, in each step.
        const int64_t want = stage_bytes(config, comm.rank(), p);
        for (std::size_t k = 0; k < bytes.size(); ++k) {
          EXPECT_TRUE(bytes[k].first == want && bytes[k].second == want)
              << name << " p = " << p << ", m = " << m << ", stage " << comm.rank() << ", step "
              << k + 1 << ": expected " << want << " bytes sent and received (every row's "
              << "activations to s+1 and input gradients to s-1, once), got " << bytes[k].first
              << " sent and " << bytes[k].second << " received. Revisit the executor's "
              << "messages: what crosses a boundary must travel through the communicator, not "
              << "through shared memory";
        }
      },
      fast());
  for (const std::vector<StageResult>& stages : steps) {
    for (const StageResult& stage : stages) lab07_cases::record_stage(recorded, stage);
  }
  const StageResult whole = sequential_step(config);
  for (std::size_t k = 0; k < steps.size(); ++k) {
    const std::vector<StageResult>& stages = steps[k];
    const std::string when =
        k == 0 ? "the first step (the gradients held " + std::to_string(int(kStaleGradient)) +
                     " from a previous step)"
               : "the second step on the same layers (the gradients held the first step's)";
    std::size_t seen = 0;
    for (int s = 0; s < p; ++s) {
      for (const auto& [param, grad] : stages[static_cast<std::size_t>(s)].grads) {
        ++seen;
        ASSERT_TRUE(whole.grads.count(param)) << param;
        EXPECT_EQ(bitwise_diff(grad, whole.grads.at(param)), "")
            << name << " p = " << p << ", m = " << m << ", " << when << ": stage " << s
            << "'s gradient of " << param << " must equal the sequential step's bit for bit "
            << "(same micro-batches, backwards in order; the stage's first backward of EACH "
            << "step OVERWRITES whatever the gradients held, the next ACCUMULATE)";
      }
    }
    EXPECT_EQ(seen, whole.grads.size()) << "every parameter belongs to exactly one stage";
    const float loss = stages[static_cast<std::size_t>(p) - 1].loss;
    EXPECT_EQ(bitwise_diff({loss}, {whole.loss}), "")
        << name << " p = " << p << ", m = " << m << ", " << when << ": the last stage returns "
        << "the batch's loss, sum of loss_weights[i] x loss_i";
    for (int s = 0; s + 1 < p; ++s) {
      EXPECT_EQ(stages[static_cast<std::size_t>(s)].loss, 0.f)
          << "stage " << s << " returns 0 (" << when << ")";
    }
  }
}

TEST(Executor, GpipeStepEqualsTheSequentialStepBitwise) {
  gtl::judge::Outputs recorded("Executor.GpipeStepEqualsTheSequentialStepBitwise");
  for (const auto& [p, m] : std::vector<std::pair<int, int64_t>>{
           {1, 4}, {2, 4}, {3, 2}, {3, 5}, {4, 2}, {4, 4}, {5, 7}}) {
    expect_equals_sequential("GPipe", gpipe_schedule(p, m), lab07_cases::executor_config(p, m),
                             recorded);
  }
}

// The serial order: every stage pairs a send with a receive from the same neighbour, both ways.
TEST(Executor, SerialOrderStepEqualsTheSequentialStepBitwise) {
  gtl::judge::Outputs recorded("Executor.SerialOrderStepEqualsTheSequentialStepBitwise");
  for (const auto& [p, m] : std::vector<std::pair<int, int64_t>>{
           {1, 4}, {2, 4}, {3, 2}, {3, 5}, {4, 2}, {4, 4}, {5, 7}}) {
    expect_equals_sequential("serial order", testing::serial_order(p, m),
                             lab07_cases::executor_config(p, m), recorded);
  }
}

// A shape, a batch (uneven micro-batches included) and data drawn from the grading seed, under
// GPipe and the serial order.
TEST(Executor, SeededBatchStepEqualsTheSequentialStepBitwise) {
  const std::string test = "Executor.SeededBatchStepEqualsTheSequentialStepBitwise";
  gtl::judge::Outputs recorded(test);
  const lab07_cases::ExecutorCase c = lab07_cases::seeded_executor_case(test);
  const std::string where = " (batch " + std::to_string(c.config.batch) + ", data seed " +
                            std::to_string(c.config.data_seed) + ", " + gtl::test_seed::describe() +
                            ")";
  expect_equals_sequential("GPipe" + where, gpipe_schedule(c.p, c.m), c.config, recorded);
  expect_equals_sequential("serial order" + where, testing::serial_order(c.p, c.m), c.config,
                           recorded);
}

// What the header's pairing rule gives for stage s: the number of send_recv calls (a send to a
// neighbour followed by a receive from the same neighbour).
int64_t expected_send_recvs(const StageSchedule& actions, int s, int p) {
  int64_t pairs = 0;
  for (std::size_t k = 0; k + 1 < actions.size(); ++k) {
    const bool f = actions[k].op == Op::Forward, next_f = actions[k + 1].op == Op::Forward;
    const int sends_to = f ? (s + 1 < p ? s + 1 : -1) : (s > 0 ? s - 1 : -1);
    const int receives_from = next_f ? (s > 0 ? s - 1 : -1) : (s + 1 < p ? s + 1 : -1);
    if (sends_to >= 0 && sends_to == receives_from) ++pairs;
  }
  return pairs;
}

// Each stage's bytes sent and received and its send_recv calls go to the judge, which computes
// them from the boundaries' sizes and the schedule.
void expect_traffic(const PipelineConfig& config, gtl::judge::Outputs& recorded,
                    const std::string& where) {
  const int p = static_cast<int>(config.boundaries.size()) - 1;
  const int64_t m = config.micro_batches;
  for (const bool serial : {false, true}) {
    const Schedule schedule = serial ? testing::serial_order(p, m) : gpipe_schedule(p, m);
    const std::string name = std::string(serial ? "serial order" : "GPipe") + where;
    std::vector<std::map<std::string, dist::OpCounters>> counters(p);
    run_stages(
        p,
        [&](Communicator& comm) {
          pipeline_step(comm, config, schedule[static_cast<std::size_t>(comm.rank())]);
          counters[static_cast<std::size_t>(comm.rank())] = comm.counters();
        },
        fast());
    for (int s = 0; s < p; ++s) {
      const auto& c = counters[static_cast<std::size_t>(s)];
      const int64_t in = s > 0 ? gtl::shape_numel(boundary_sample_shape(
                                     config.model, config.boundaries[static_cast<std::size_t>(s)]))
                               : 0;
      const int64_t out =
          s + 1 < p ? gtl::shape_numel(boundary_sample_shape(
                          config.model, config.boundaries[static_cast<std::size_t>(s) + 1]))
                    : 0;
      // Every row of the batch crosses each boundary once forward and once backward.
      const int64_t sent = config.batch * (out + in) * 4, received = sent;
      int64_t got_sent = 0, got_received = 0;
      for (const auto& [op, k] : c) {
        got_sent += k.bytes_sent;
        got_received += k.bytes_received;
      }
      const auto send_recv = c.find("send_recv");
      recorded.record(got_sent), recorded.record(got_received);
      recorded.record(send_recv == c.end() ? 0 : send_recv->second.calls);
      EXPECT_EQ(got_sent, sent) << name << " p = " << p << ", m = " << m << ", stage " << s
                                << ": bytes sent per step must be the m "
                                << "activations to s+1 (" << config.batch << " rows x " << out
                                << " floats) plus the m "
                                << "input gradients to s-1 (" << config.batch << " rows x " << in
                                << " floats)";
      EXPECT_EQ(got_received, received) << name << " stage " << s << ": bytes received";
      const int64_t pairs = expected_send_recvs(schedule[static_cast<std::size_t>(s)], s, p);
      const auto it = c.find("send_recv");
      EXPECT_EQ(it == c.end() ? 0 : it->second.calls, pairs)
          << name << " p = " << p << ", m = " << m << ", stage " << s << " ("
          << to_string(schedule[static_cast<std::size_t>(s)]) << "): a send to a neighbour "
          << "followed by a receive from the SAME neighbour is one send_recv (expected " << pairs
          << " of them); every other message a plain send or recv";
    }
  }
}

TEST(Executor, SendsEachActivationAndGradientExactlyOncePairedWithSendRecv) {
  gtl::judge::Outputs recorded(
      "Executor.SendsEachActivationAndGradientExactlyOncePairedWithSendRecv");
  expect_traffic(lab07_cases::executor_config(3, 5), recorded, "");
}

// The same on a shape and a batch drawn from the grading seed.
TEST(Executor, SendsEachActivationAndGradientExactlyOnceOnASeededBatch) {
  const std::string test = "Executor.SendsEachActivationAndGradientExactlyOnceOnASeededBatch";
  gtl::judge::Outputs recorded(test);
  const lab07_cases::ExecutorCase c = lab07_cases::seeded_executor_case(test);
  expect_traffic(
      c.config, recorded,
      " (batch " + std::to_string(c.config.batch) + ", " + gtl::test_seed::describe() + ")");
}

// A blocking executor: each message on its own, the send as soon as the output exists, the
// receive just before the action needs it. Only the communication, no layers.
void naive_blocking_stage(Communicator& comm, const StageSchedule& actions) {
  const int s = comm.rank(), p = comm.world_size();
  Tensor message = Tensor::zeros({4});
  for (const Action& a : actions) {
    const bool f = a.op == Op::Forward;
    if (f && s > 0) comm.recv(message, s - 1);
    if (!f && s + 1 < p) comm.recv(message, s + 1);
    if (f && s + 1 < p) comm.send(message, s + 1);
    if (!f && s > 0) comm.send(message, s - 1);
  }
}

// Your executor on both_neighbours_send (p = 2, m = 4) under rendezvous sends: it must finish, and
// stage 0 must send every row's activation once (recorded for the judge, with whether the step
// threw).
void expect_runs_under_rendezvous(const PipelineConfig& config, gtl::judge::Outputs& recorded,
                                  const std::string& where) {
  const Schedule schedule = testing::both_neighbours_send();
  int64_t sent_by_stage_0 = -1;
  bool finished = false;
  EXPECT_NO_THROW({
    dist::run_ranks(
        2,
        [&](Communicator& comm) {
          pipeline_step(comm, config, schedule[static_cast<std::size_t>(comm.rank())]);
          if (comm.rank() == 0) sent_by_stage_0 = comm.total_counters().bytes_sent;
        },
        fast());  // rendezvous sends too, with a timeout no load can reach
    finished = true;
  }) << "your executor on the same schedule, rendezvous sends: pair the send with the "
     << "receive from the same neighbour in one send_recv" << where;
  recorded.record(finished), recorded.record(sent_by_stage_0);
  const int64_t activations =
      config.batch * gtl::shape_numel(boundary_sample_shape(config.model, 3)) * 4;
  EXPECT_EQ(sent_by_stage_0, activations) << "stage 0 of 2 sends the activations of all "
                                          << config.batch << " rows to stage 1, once" << where;
}

TEST(Executor, ABlockingExecutorDeadlocksInTheSteadyStateYoursDoesNot) {
  const Schedule schedule = testing::both_neighbours_send();
  dist::RunOptions options = fast();
  options.timeout = std::chrono::milliseconds(500);
  std::string error;
  try {
    dist::run_ranks(
        2,
        [&](Communicator& comm) {
          naive_blocking_stage(comm, schedule[static_cast<std::size_t>(comm.rank())]);
        },
        options);
  } catch (const dist::DistError& e) {
    error = e.what();
  }
  EXPECT_NE(error.find("deadlock"), std::string::npos)
      << "the blocking executor on both_neighbours_send (p = 2, m = 4): stage 0 sends F1's "
      << "activation while stage 1 sends B0's gradient, each waiting for the other to receive; "
      << "the rendezvous mode "
      << "must report it as a deadlock, got: '" << error << "'";
  gtl::judge::Outputs recorded("Executor.ABlockingExecutorDeadlocksInTheSteadyStateYoursDoesNot");
  expect_runs_under_rendezvous(lab07_cases::executor_config(2, 4), recorded, "");
}

// Your executor on the same schedule with a batch drawn from the grading seed.
TEST(Executor, ABlockingExecutorDeadlocksYoursDoesNotOnASeededBatch) {
  gtl::judge::Outputs recorded("Executor.ABlockingExecutorDeadlocksYoursDoesNotOnASeededBatch");
  PipelineConfig config = lab07_cases::executor_config(2, 4);
  config.batch = lab07_cases::seeded_deadlock_batch();
  expect_runs_under_rendezvous(
      config, recorded,
      " (batch " + std::to_string(config.batch) + ", " + gtl::test_seed::describe() + ")");
}

// Bytes one micro-batch's forward keeps for its backward on stage s (its nn::Context: the input
// received from s-1 and what the layers save). On the middle stages of the lab model these are
// all fresh allocations (on stage 0 the input is a view of the batch; the last stage adds the
// loss's context), so the rank's allocator peak during the step, divided by it, counts the
// micro-batches in flight: the step's temporaries (the messages, a GELU output) stay below one.
int64_t one_micro_batch_context_bytes(const PipelineConfig& config, int s, int64_t rows) {
  auto layers = nn::make_stage(config.model, config.boundaries[static_cast<std::size_t>(s)],
                               config.boundaries[static_cast<std::size_t>(s) + 1]);
  Shape shape = boundary_sample_shape(config.model, config.boundaries[static_cast<std::size_t>(s)]);
  shape.insert(shape.begin(), rows);
  nn::Context ctx;
  layers->forward(Tensor::zeros(shape), ctx);
  return ctx.saved_bytes();
}

// p stages, m micro-batches of `rows` rows each; every stage's peak under GPipe, then under the
// serial order, goes to the judge, which measures a micro-batch's context with the core's forward.
void expect_micro_batches_in_flight(int p, int64_t m, int64_t rows, gtl::judge::Outputs& recorded,
                                    const std::string& where) {
  PipelineConfig config = lab07_cases::executor_config(p, m);
  config.batch = m * rows;
  const std::string shape = "p = " + std::to_string(p) + ", m = " + std::to_string(m);
  std::map<std::string, std::vector<int64_t>> peaks;
  for (const bool serial : {false, true}) {
    const Schedule schedule = serial ? testing::serial_order(p, m) : gpipe_schedule(p, m);
    std::vector<int64_t>& peak = peaks[serial ? "serial" : "GPipe"];
    peak.resize(static_cast<std::size_t>(p));
    std::vector<std::vector<int64_t>> events(static_cast<std::size_t>(p));
    std::vector<std::shared_ptr<gtl::Allocator>> allocators;
    for (int r = 0; r < p; ++r) allocators.push_back(gtl::make_cpu_allocator());
    dist::RunOptions options = fast();
    options.allocators = allocators;
    run_stages(
        p,
        [&](Communicator& comm) {
          const auto s = static_cast<std::size_t>(comm.rank());
          const StageResult result = pipeline_step(comm, config, schedule[s]);
          peak[s] = result.step_peak_bytes;
          events[s] = result.step_events;
        },
        options);
    recorded.record_all(peak);
    for (const std::vector<int64_t>& stage_events : events) recorded.record_all(stage_events);
  }
  for (int s = 1; s + 1 < p; ++s) {
    const int64_t per_micro_batch = one_micro_batch_context_bytes(config, s, rows);
    const auto at = static_cast<std::size_t>(s);
    EXPECT_EQ(peaks["GPipe"][at] / per_micro_batch, m)
        << "GPipe " << shape << ", stage " << s << ": a peak of " << peaks["GPipe"][at]
        << " bytes during the step is " << peaks["GPipe"][at] / per_micro_batch
        << " micro-batches of " << per_micro_batch << " bytes in flight, expected all m = " << m
        << " (revisit what your executor keeps alive between actions: a micro-batch's context, "
        << "input and messages, from its forward to its backward only)" << where;
    EXPECT_EQ(peaks["serial"][at] / per_micro_batch, 1)
        << "serial order " << shape << ", stage " << s << ": a peak of " << peaks["serial"][at]
        << " bytes is " << peaks["serial"][at] / per_micro_batch << " micro-batches of "
        << per_micro_batch << " bytes in flight, expected 1 (each backward comes before the next "
        << "forward): keep a micro-batch's context, input and messages only from its forward to "
        << "its backward (do not keep received tensors or outputs for the whole step)" << where;
  }
  // Stage 0 keeps views of the batch (no activation bytes of its own): only its temporaries.
  for (int s = 1; s < p; ++s) {
    EXPECT_LE(peaks["serial"][static_cast<std::size_t>(s)],
              peaks["GPipe"][static_cast<std::size_t>(s)])
        << shape << ", stage " << s << ": the serial order never holds more than GPipe" << where;
  }
}

TEST(Executor, HoldsMMicroBatchesUnderGpipeAndOneInTheSerialOrder) {
  gtl::judge::Outputs recorded("Executor.HoldsMMicroBatchesUnderGpipeAndOneInTheSerialOrder");
  expect_micro_batches_in_flight(4, 8, 3, recorded, "");
}

// Fewer micro-batches than stages (p = 3, m = 2) and an odd depth (p = 5, m = 7).
TEST(Executor, HoldsMMicroBatchesWithFewerMicroBatchesThanStagesAndOddShapes) {
  gtl::judge::Outputs recorded(
      "Executor.HoldsMMicroBatchesWithFewerMicroBatchesThanStagesAndOddShapes");
  for (const auto& [p, m] : lab07_cases::in_flight_shapes()) {
    expect_micro_batches_in_flight(p, m, 3, recorded, "");
  }
}

// The same with rows per micro-batch drawn from the grading seed.
TEST(Executor, HoldsMMicroBatchesOnASeededBatch) {
  gtl::judge::Outputs recorded("Executor.HoldsMMicroBatchesOnASeededBatch");
  const int64_t rows = lab07_cases::seeded_memory_rows();
  expect_micro_batches_in_flight(
      4, 8, rows, recorded,
      " (" + std::to_string(rows) + " rows per micro-batch, " + gtl::test_seed::describe() + ")");
}

}  // namespace
}  // namespace lab07
