// lab06_clip_processes (provided, pristine): TODO 7 on the launcher's processes (see
// tests/clip_processes.h).
//
//   mpirun -np 3 lab06_clip_processes --seed S --out PREFIX
//
// Each rank takes its shard (the core's ShardLayout) of the seed's whole gradient, clips it with
// your clip_sharded_grad_norm_, then, once per overflow case, unscales a fresh copy of its shard
// (an inf in it when the case names this rank), calls your agree_found_inf and records whether its
// scaler stepped. Rank r writes PREFIX.r.
#include <exception>
#include <iostream>
#include <limits>
#include <memory>
#include <string>

#include "clip_processes.h"
#include "gtl/distributed/launch.h"
#include "gtl/nn/flat_parameter.h"
#include "lab06_student_call.h"
#include "sharded.h"

namespace {

using namespace lab06_clip_processes;

// This rank's real shard of `whole` as one parameter (none when it owns only padding).
std::vector<lab06::ParamRef> shard(const std::vector<float>& whole, int world, int rank) {
  const auto numel = static_cast<int64_t>(whole.size());
  const gtl::nn::ShardLayout layout(numel, world);
  const int64_t real = layout.real_numel(rank);
  if (real == 0) return {};
  const auto first = whole.begin() + layout.shard_offset(rank);
  return {lab06::ParamRef{gtl::Tensor::zeros({real}),
                          gtl::Tensor::from_vector({first, first + real}, {real}), gtl::Tensor(),
                          "shard"}};
}

}  // namespace

int main(int argc, char** argv) {
  uint64_t seed = 0;
  std::string out;
  for (int i = 1; i + 1 < argc; i += 2) {
    const std::string flag = argv[i], value = argv[i + 1];
    if (flag == "--seed") seed = std::stoull(value);
    if (flag == "--out") out = value;
  }
  if (out.empty()) {
    std::cerr << "usage: lab06_clip_processes --seed S --out PREFIX\n";
    return 2;
  }
  try {
    const std::unique_ptr<lab06::Communicator> comm = gtl::dist::init_from_environment();
    GTL_CHECK(comm->backend() != "nccl", "lab06_clip_processes runs on the CPU (MPI)");
    comm->set_deterministic(true);
    const int world = comm->world_size(), rank = comm->rank();
    const std::vector<float> whole = gradient(seed);
    RankResult result;
    result.world_size = world;
    {
      std::vector<lab06::ParamRef> mine = shard(whole, world, rank);
      {
        const auto call = lab06_student_call::todo7();
        result.norm = lab06::clip_sharded_grad_norm_(*comm, mine, kMaxNorm);
      }
      if (!mine.empty()) result.clipped = mine[0].grad.to_vector();
    }
    for (const int overflow : overflow_cases()) {
      std::vector<lab06::ParamRef> mine = shard(whole, world, rank);
      if (rank == overflow && !mine.empty()) {
        std::vector<float> g = mine[0].grad.to_vector();
        g[0] = std::numeric_limits<float>::infinity();
        mine[0].grad.copy_(gtl::Tensor::from_vector(g, mine[0].grad.shape()));
      }
      gtl::optim::LossScaler scaler;
      gtl::optim::AdamW optimizer(mine);
      scaler.unscale_(mine);
      {
        const auto call = lab06_student_call::todo7();
        lab06::agree_found_inf(*comm, scaler);
      }
      result.stepped.push_back(scaler.step(optimizer) ? 1 : 0);
    }
    write_result(out + "." + std::to_string(rank), result);
    return 0;
  } catch (const std::exception& e) {
    std::cerr << "lab06_clip_processes: " << e.what() << "\n";
    return 1;
  }
}
