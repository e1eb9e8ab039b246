// Inputs and models of lab 05's tests, shared by the tests and the lab's judge
// (judge/lab05_judge.cpp): the judge draws the same inputs from the grading seed and recomputes
// what the tests recorded (gtl_judge_output.h) with the lab's pristine training harness
// (src/ddp_training.cpp: train_single_process, the core's flat sync) and the core.
#pragma once

#include <cstdint>
#include <memory>
#include <random>
#include <vector>

#include "data_parallel.h"
#include "ddp_training.h"
#include "gtl/distributed/in_process.h"
#include "gtl/nn/linear.h"
#include "gtl/nn/sequential.h"
#include "gtl/ops/elementwise.h"
#include "gtl_test_seed.h"
#include "lab05_test_util.h"

namespace lab05_cases {

using gtl::Tensor;
namespace nn = gtl::nn;

// ---- TODO 1: the ring ---------------------------------------------------------------------------
struct RingCase {
  int world = 2;
  int64_t n = 1, shift = 0;  // rank r's element i is testing::value(r, i + shift)
};
inline std::vector<RingCase> seeded_ring_cases() {
  std::mt19937_64 g = gtl::test_seed::generator("RingAllReduce.SeededWorldsSizesAndValues");
  std::vector<RingCase> cases(3);
  for (auto& c : cases) {
    c.world = int(gtl::test_seed::draw(g, 2, 5));
    c.n = gtl::test_seed::draw(g, 1, 400);
    c.shift = gtl::test_seed::draw(g, 0, 1000);
  }
  return cases;
}
inline std::vector<float> ring_input(const RingCase& c, int rank) {
  std::vector<float> v(static_cast<std::size_t>(c.n));
  for (int64_t i = 0; i < c.n; ++i) v[std::size_t(i)] = lab05::testing::value(rank, i + c.shift);
  return v;
}
// The element-wise sum of every rank's input: exact (small integers).
inline std::vector<float> ring_sum(const RingCase& c) {
  std::vector<float> out = ring_input(c, 0);
  for (int r = 1; r < c.world; ++r) {
    const std::vector<float> v = ring_input(c, r);
    for (std::size_t i = 0; i < out.size(); ++i) out[i] += v[i];
  }
  return out;
}

// ---- TODO 1: what the ring costs (RingCost.*) ---------------------------------------------------
// N = 3 and N = 5, each size drawn from the grading seed and made not divisible by N (so the tail
// is ragged); the last size is below 20, where a chunk can lie wholly past n (N = 5, n = 11:
// c = 3, chunk 3 is [9, 11) padded, chunk 4 starts at 12).
inline std::vector<RingCase> seeded_ring_cost_cases() {
  std::mt19937_64 g = gtl::test_seed::generator("RingCost.SeededCases");
  std::vector<RingCase> cases(3);
  const int worlds[] = {3, 5, 5};
  const int64_t largest[] = {4000, 4000, 19};
  for (std::size_t i = 0; i < cases.size(); ++i) {
    RingCase& c = cases[i];
    c.world = worlds[i];
    c.n = gtl::test_seed::draw(g, c.world + 1, largest[i]);
    if (c.n % c.world == 0) ++c.n;
    c.shift = gtl::test_seed::draw(g, 0, 1000);
  }
  return cases;
}

// What the spec in data_parallel.h costs one rank, derived from c = ceil(n/N):
// - messages: 2(N-1) send_recv calls, each sending c floats to r+1 and receiving c from r-1;
// - memory: chunk i is a view when it lies wholly inside the tensor ((i+1) c <= n: floor(n/c) of
//   them), so the rest, N - floor(n/c) chunks, are zero-padded tensors of c floats; the
//   reduce-scatter adds an arriving chunk into one it holds, so it needs one receive buffer of c
//   floats more. The core's ring allocates 0 (docs/distributed.md, "Memory of the collectives": it
//   reduces straight out of the peer's tensor), which send_recv cannot do. All of these buffers
//   are alive together, so the peak is exactly (1 + padded) c * 4 bytes above the caller's
//   tensors; each is allocated once, so at most 1 + padded allocations (fewer if the padded
//   chunks share one allocation), and nothing is left allocated when the call returns.
struct RingCost {
  int64_t chunk = 0;            // c, floats
  int64_t messages = 0;         // send_recv calls per rank
  int64_t message_bytes = 0;    // each way, per message
  int64_t padded_chunks = 0;    // chunks not wholly inside the tensor
  int64_t scratch_bytes = 0;    // peak allocated above the caller's tensors
  int64_t max_allocations = 0;  // allocations during the call
};
inline RingCost ring_cost(int world, int64_t n) {
  RingCost k;
  k.chunk = (n + world - 1) / world;
  k.messages = 2 * (world - 1);
  k.message_bytes = k.chunk * 4;
  k.padded_chunks = world - n / k.chunk;
  k.scratch_bytes = (1 + k.padded_chunks) * k.chunk * 4;
  k.max_allocations = 1 + k.padded_chunks;
  return k;
}

// ---- TODO 1: the ring across real processes (RingProcesses.*) -----------------------------------
// Three processes (mpirun -np 3): a size below 3 (chunks past the end), a size up to 4000 and one
// up to 100,000, the last two not divisible by 3, drawn from the grading seed.
constexpr int kRingProcesses = 3;
inline std::vector<int64_t> seeded_ring_process_sizes() {
  std::mt19937_64 g = gtl::test_seed::generator("RingProcesses.Sizes");
  std::vector<int64_t> sizes = {gtl::test_seed::draw(g, 1, 2), gtl::test_seed::draw(g, 4, 4000),
                                gtl::test_seed::draw(g, 4001, 100000)};
  for (int64_t& n : sizes) n += n % kRingProcesses == 0 ? 1 : 0;
  return sizes;
}

// ---- TODO 2: the sampler and the broadcast ------------------------------------------------------
struct SamplerCase {
  int64_t size = 1;
  int world = 1;
  uint64_t seed = 0;
  int64_t epoch = 0;
};
inline std::vector<SamplerCase> seeded_sampler_cases() {
  std::mt19937_64 g = gtl::test_seed::generator("DistributedSampler.SeededShards");
  std::vector<SamplerCase> cases(4);
  for (auto& c : cases) {
    c.size = gtl::test_seed::draw(g, 1, 300);
    c.world = int(gtl::test_seed::draw(g, 1, 6));
    c.seed = static_cast<uint64_t>(gtl::test_seed::draw(g, 0, 1 << 20));
    c.epoch = gtl::test_seed::draw(g, 0, 5);
  }
  return cases;
}
// The model seed of rank 0 in BroadcastParameters (rank r uses it + r).
inline uint64_t broadcast_base_seed() {
  std::mt19937_64 g = gtl::test_seed::generator("BroadcastParameters.Seed");
  return static_cast<uint64_t>(gtl::test_seed::draw(g, 100, 100000));
}
// The model seed of rank 0 in BroadcastProcesses (rank r uses it + r).
inline uint64_t broadcast_process_base_seed() {
  std::mt19937_64 g = gtl::test_seed::generator("BroadcastProcesses.Seed");
  return static_cast<uint64_t>(gtl::test_seed::draw(g, 100, 100000));
}
// The initial weights of the lab model with this seed, flat.
inline std::vector<float> initial_weights(uint64_t seed) {
  nn::ModelConfig config = lab05::lab_model();
  config.seed = seed;
  std::vector<float> all;
  for (const auto& p : nn::make_model(config)->parameters()) {
    const std::vector<float> v = p.value.to_vector();
    all.insert(all.end(), v.begin(), v.end());
  }
  return all;
}

// ---- TODOs 3 to 5: the training every DDP variant must reproduce --------------------------------
// The data seed of the equivalence runs (equivalence.h), drawn per test from the grading seed.
inline lab05::TrainConfig seeded_train_config(const std::string& test) {
  std::mt19937_64 g = gtl::test_seed::generator(test);
  lab05::TrainConfig config;
  config.data_seed = static_cast<uint64_t>(gtl::test_seed::draw(g, 0, 1 << 20));
  return config;
}

// What every real-process run is compared with: rank 0's result of the lab's training at
// `config` on `world` in-process ranks, run by the pristine harness (ddp_training.h) as the tests'
// reference (shared with the judge).
inline lab05::TrainResult reference_run(int world,
                                        const lab05::TrainConfig& config = lab05::TrainConfig{}) {
  std::vector<lab05::TrainResult> results(static_cast<std::size_t>(world));
  gtl::dist::run_ranks(
      world,
      [&](lab05::Communicator& comm) {
        results[std::size_t(comm.rank())] =
            lab05::train_lab_model(comm, config, lab05::core_flat_sync());
      },
      lab05::testing::fast(true));
  return results[0];
}

// The bucket sizes BucketedDdp.BucketsFollow... tries, given the lab model's last parameter.
inline std::vector<int64_t> bucket_sizes(int64_t last_bytes) {
  return {int64_t{1}, last_bytes, int64_t{4096}, int64_t{20000}, int64_t{1} << 30};
}

// Two branches whose backward makes branch a's gradients (the last parameters) ready first.
class TwoBranches final : public nn::Module {
 public:
  explicit TwoBranches(gtl::Generator& gen) : Module("two_branches") {
    add_child("a", std::make_unique<nn::Linear>(4, 3, gen));
    auto b = std::make_unique<nn::Sequential>();
    b->add(std::make_unique<nn::Linear>(4, 2, gen));
    b->add(std::make_unique<nn::Linear>(2, 3, gen));
    add_child("b", std::move(b));
  }

 protected:
  Tensor forward_impl(const Tensor& x, nn::Context& ctx) override {
    ctx.children.resize(2);
    return gtl::ops::add(children_[0]->forward(x, ctx.children[0]),
                         children_[1]->forward(x, ctx.children[1]));
  }
  Tensor backward_impl(nn::Context& ctx, const Tensor& dy, nn::GradMode mode) override {
    Tensor da = children_[0]->backward(ctx.children[0], dy, mode);
    Tensor db = children_[1]->backward(ctx.children[1], dy, mode);
    return gtl::ops::add(da, db);
  }
};

// ---- TODO 6: accumulation without sync ----------------------------------------------------------
// Micro-batch m's gradient on rank r, element i: an integer.
inline float micro_grad(int rank, int64_t m, int64_t i) {
  return lab05::testing::value(rank + 3 * static_cast<int>(m), i);
}
// After a step of k micro-batches on `world` ranks: the average over ranks of the sums.
inline std::vector<float> no_sync_expected(int world, int64_t k, int64_t n) {
  std::vector<float> expected(static_cast<std::size_t>(n), 0.f);
  for (int64_t i = 0; i < n; ++i) {
    float sum = 0;
    for (int r = 0; r < world; ++r)
      for (int64_t m = 0; m < k; ++m) sum += micro_grad(r, m, i);
    expected[std::size_t(i)] = sum / float(world);
  }
  return expected;
}

}  // namespace lab05_cases
