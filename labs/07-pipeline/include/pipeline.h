// Lab 07, pipeline parallelism: a model cut into p stages, one per rank, a batch cut into m
// micro-batches that flow through them, and the schedules (GPipe, 1F1B) that decide what each
// stage does when, with the idle time ("bubble") and the activation memory each schedule costs.
//
// This header is part of the pristine lab (labs/07-pipeline/include): do not edit it. Your files
// are in starter/07-pipeline/, one per TODO; the map from TODO to file, test and check is in the
// handout, labs/07-pipeline/README.md. Everything runs on in-process ranks (gtl::dist::run_ranks)
// on the CPU, one rank per stage; the same executor runs as processes under mpirun.
//
// The core gives you the pieces: nn::make_stage (the layers [begin, end) of the model, and only
// their parameters), Communicator::send / recv / send_recv, the trace and the simulated timeline
// (which measures the bubble of a traced step). It has no partitioner, schedule or executor, and
// nothing that computes a schedule's bubble on a clock (TODO 6): those are yours. Each TODO's
// file must not use the core symbols listed for it in the rubric (the grader reads the symbols of
// each student FILE and scores the TODO 0 when the file uses one).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "gtl/distributed/communicator.h"
#include "gtl/nn/module.h"
#include "gtl/tensor/tensor.h"

namespace lab07 {

using gtl::Shape;
using gtl::Tensor;
using gtl::dist::Communicator;

// ---- 1. Partition (partition.cpp) -------------------------------------------------------------
// Cuts layers 0..L-1 (layer_costs.size() == L, every cost >= 0) into `stages` = p contiguous,
// non-empty stages and returns the p + 1 boundaries 0 = b_0 < b_1 < ... < b_p = L: stage s owns
// layers [b_s, b_{s+1}). The boundaries MINIMISE THE COST OF THE SLOWEST STAGE (the sum of its
// layers' costs): the pipeline runs at the pace of its slowest stage. When several cuts reach that
// minimum, any of them is accepted. Throws gtl::Error unless 1 <= p <= L.
std::vector<int64_t> partition_layers(const std::vector<double>& layer_costs, int stages);

// ---- 2. Micro-batches (micro_batch.cpp) -------------------------------------------------------
// Rows [begin, end) of the batch.
struct MicroBatch {
  int64_t begin = 0;
  int64_t end = 0;
  int64_t size() const { return end - begin; }
};

// Cuts a batch of `batch` rows into m micro-batches, in order, covering every row exactly once,
// their sizes differing by at most one, the larger ones first (10 rows in 4: 3, 3, 2, 2). Throws
// gtl::Error unless 1 <= m <= batch.
std::vector<MicroBatch> split_micro_batches(int64_t batch, int64_t m);

// The factor micro-batch `mb`'s MEAN loss is scaled by (the `dloss` of its backward) so that the
// gradients accumulated over all micro-batches equal the gradient of the mean loss of the whole
// batch of `batch` rows.
float micro_batch_weight(const MicroBatch& mb, int64_t batch);

// ---- 3 and 4. Schedules as data -----------------------------------------------------------------
// One stage's work: forward or backward of micro-batch `micro_batch`. Communication is implied
// (it is the executor's job, TODO 5): forward i on stage s > 0 first needs stage s-1's output of
// micro-batch i, backward i on stage s < p-1 first needs stage s+1's gradient of micro-batch i.
enum class Op { Forward, Backward };
struct Action {
  Op op = Op::Forward;
  int64_t micro_batch = 0;
  bool operator==(const Action& other) const {
    return op == other.op && micro_batch == other.micro_batch;
  }
};
using StageSchedule = std::vector<Action>;    // in the order the stage runs them
using Schedule = std::vector<StageSchedule>;  // index = stage

// "F0 F1 B0 B1": a stage's actions as text (tests, messages, the handout's pictures).
std::string to_string(const StageSchedule& actions);

// "" when `schedule` is valid for m micro-batches: every stage runs forward i and backward i
// exactly once for every i in [0, m), forward i on stage s comes after forward i on stage s-1,
// backward i on stage s after backward i on stage s+1 and after forward i on stage s; and the
// stages' orders together can run (no stage waits, directly or around a cycle, for work that
// comes later in another stage's order). Otherwise what is wrong, in words.
std::string schedule_problem(const Schedule& schedule, int64_t m);

// 3. GPipe (given: the harness, src/gpipe_order.cpp): every stage runs all m forwards (0, 1, ...,
// m-1), then all m backwards (0, 1, ..., m-1). Throws gtl::Error unless p >= 1 and m >= 1.
Schedule gpipe_schedule(int stages, int64_t m);

// 4. 1F1B (one_f_one_b_schedule.cpp), PipeDream-Flush as in Megatron-LM. Every stage runs its
// forwards in micro-batch order and its backwards in micro-batch order, in three phases: a
// warm-up of forwards only; a steady phase alternating one forward then one backward; a
// cool-down of the backwards left. Stage s never holds the activations of more than
// min(p - s, m) micro-batches at once (a micro-batch is held from its forward to its backward;
// GPipe: all m), and each stage's warm-up is the LONGEST that bound allows (every forward run
// early is one the stage need not fit in later). Throws gtl::Error unless p >= 1 and m >= 1.
Schedule one_f_one_b_schedule(int stages, int64_t m);

// ---- 5. The executor (pipeline_executor.cpp) --------------------------------------------------
// Everything rank s = comm.rank() of p = comm.world_size() needs for one training step.
struct StageStep {
  gtl::nn::Module* layers = nullptr;  // this stage's layers (nn::make_stage), parameters in a
                                      // ParameterBuffer on `device`
  StageSchedule actions;              // this stage's schedule
  std::vector<MicroBatch> micro_batches;
  std::vector<float> loss_weights;  // per micro-batch: the dloss of its backward (last stage)
  Tensor images;                    // stage 0: the whole batch's inputs [batch, ...]
  Tensor labels;                    // last stage: the whole batch's labels [batch], int64
  Shape input_sample;   // s > 0: ONE sample's shape of the activation stage s-1 sends (a
                        // micro-batch of n rows arrives as [n, input_sample...], float32)
  Shape output_sample;  // s < p-1: one sample's shape of what this stage sends to s+1
  gtl::Device device = gtl::Device::cpu();  // where the layers, the batch and the messages live
};

// Runs `step.actions` in order. Forward i: the input is micro-batch i's rows of `images` on stage
// 0, else the activation received from s-1; the output goes to s+1 (last stage: the mean
// cross-entropy of micro-batch i against its labels, nn::CrossEntropyLoss). Backward i: the
// gradient of the output is received from s+1 (last stage: the loss's backward with dloss
// loss_weights[i]); the layers' backward writes the parameter gradients, OVERWRITING them for the
// stage's first backward of the step and ACCUMULATING after it, and the input gradient goes to
// s-1. Each micro-batch's nn::Context lives from its forward to its backward only.
// Point to point: where a stage sends to a neighbour and its next action receives from the SAME
// neighbour, both go in one comm.send_recv (blocking send then recv deadlocks: rendezvous sends);
// every other message is a plain send or recv, in action order.
// Returns on the last stage the batch's loss, sum over i of loss_weights[i] x loss_i; 0 elsewhere.
float run_stage(Communicator& comm, const StageStep& step);

// ---- 6. Bubbles (bubble.cpp) ------------------------------------------------------------------
// Stage s's forward of one micro-batch takes forward_time[s], its backward backward_time[s]
// (seconds, > 0); messages are free. Every action starts as soon as the stage has finished its
// previous action and the action's dependencies have finished: forward i on s-1 for forward i;
// backward i on s+1 and the stage's own forward i for backward i (the rules schedule_problem
// states; an order that breaks one, "B0 F0" on a stage, cannot run).
struct BubbleReport {
  double step_time = 0;        // when the last action of any stage ends
  std::vector<double> busy;    // per stage: seconds of work
  std::vector<double> bubble;  // per stage: idle fraction, 1 - busy / step_time
};
// Throws gtl::Error when the stages' orders cannot run to their end or the time vectors do not
// have one entry per stage.
BubbleReport simulate_bubbles(const Schedule& schedule, const std::vector<double>& forward_time,
                              const std::vector<double>& backward_time);

// ---- 7. Interleaved 1F1B (its bubble: bubble.cpp, TODO 6) ---------------------------------------
// Megatron-LM's interleaving: each of the p ranks holds v model chunks; chunk c of rank r is
// VIRTUAL stage c * p + r, so a micro-batch crosses ranks 0, 1, ..., p-1 with chunk 0, then again
// with chunk 1, and so on. A rank's action names the chunk it runs.
struct ChunkAction {
  Op op = Op::Forward;
  int64_t micro_batch = 0;
  int chunk = 0;
  bool operator==(const ChunkAction& other) const {
    return op == other.op && micro_batch == other.micro_batch && chunk == other.chunk;
  }
};
using InterleavedSchedule = std::vector<std::vector<ChunkAction>>;  // index = rank

// Given (the harness, src/interleaved_order.cpp: leave it closed until TODO 4 is done, its phases
// are 1F1B's): Megatron-LM's interleaved 1F1B for
// p ranks, v chunks, m micro-batches (m a multiple of p, else gtl::Error). Its order is Megatron's
// convention, not a consequence of the rules above: the k-th forward of a rank
// (k = 0 .. v m - 1) runs chunk (k mod p v) / p on micro-batch (k / (p v)) p + k mod p, its k-th
// backward the same micro-batch on chunk v - 1 - (k mod p v) / p; rank r's warm-up is w_r
// forwards, where w_r = v m when m == p (no steady phase: all forwards first), and otherwise
// w_r = min((p - r - 1) 2 + (v - 1) p, v m); then the steady and cool-down phases of 1F1B, over
// the rank's v m forwards and v m backwards. Megatron uses this warm-up only for v > 1: at v = 1
// it is not the warm-up of plain 1F1B (TODO 4), so do not derive TODO 4's from it.
InterleavedSchedule interleaved_schedule(int ranks, int chunks, int64_t m);

// TODO 6 too (bubble.cpp): the bubble of an interleaved schedule on a clock, as simulate_bubbles:
// a chunk's forward takes chunk_forward_time, its backward chunk_backward_time, on every rank. The
// v p virtual stages form one pipeline and obey the dependency rules of section 6, stage for
// virtual stage; a rank is one clock, shared by its chunks. Throws gtl::Error when the orders
// cannot run. With equal chunks the bubble is (p - 1) / (v m + p - 1): v times smaller.
BubbleReport simulate_interleaved_bubbles(const InterleavedSchedule& schedule, int chunks,
                                          double chunk_forward_time, double chunk_backward_time);

}  // namespace lab07
