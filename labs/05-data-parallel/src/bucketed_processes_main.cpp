// lab05_bucketed_processes (provided, pristine): the student's sync as the sync of the lab's
// training on the launcher's processes: BucketedDdp (TODO 5, the default), flat_ddp_sync (TODO 4),
// naive_ddp_sync (TODO 3) or a NoSyncAccumulator (TODO 6).
//
//   mpirun -np 3 lab05_bucketed_processes --data-seed S --out PATH
//          [--sync bucketed|flat|naive|no-sync]
//
// The training of ddp_training.h (the default TrainConfig with data seed S, every rank building
// the model from one seed), synced by a BucketedDdp of 4 KiB buckets (several in the lab model,
// as in BucketedDdp.TrainsLike*), by your flat_ddp_sync, by your naive_ddp_sync, or by a
// NoSyncAccumulator of kMicroBatches micro-batches per step: the step's batch is micro-batch 0 and
// the others hold no sample (zero gradients), written into the flat gradient as a backward with
// acc.mode(m) would, which holds last step's synced gradient (1000 before the first step) when
// micro-batch 0 runs. Its accumulated sum is the batch's gradient bit for bit, so every sync must
// give the core's flat average. Deterministic sums on the CPU (MPI). Rank 0 writes the result
// file (write_result).
//
// Why real processes: in-process ranks are threads of one address space, so a BucketedDdp could
// launch every bucket's all-reduce on a scratch copy (the expected calls, order and bytes) and
// average the other ranks' gradients read from a global; the traffic checks of BucketedDdp.*
// cannot see it (nor those of NaiveDdp.* and FlatDdp.* the same trick in the other syncs). TODO 7's
// program syncs with the core's flat all-reduce, not yours. Processes share no memory: under mpirun
// only what travels through the communicator arrives.
#include <exception>
#include <functional>
#include <iostream>
#include <memory>
#include <string>

#include "data_parallel.h"
#include "ddp_training.h"
#include "gtl/distributed/launch.h"
#include "gtl/ops/elementwise.h"
#include "gtl/runtime/error.h"

namespace {
constexpr int64_t kBucketBytes = 4096;
constexpr int64_t kMicroBatches = 4;

// TODO 6's sync after the harness's backward (see the header comment).
std::function<void()> no_sync(lab05::Communicator& comm, gtl::nn::ParameterBuffer& buffer) {
  auto acc = std::make_shared<lab05::NoSyncAccumulator>(comm, buffer, kMicroBatches);
  const int64_t n = buffer.grads().numel();
  auto stale = std::make_shared<gtl::Tensor>(gtl::Tensor::full({n}, 1000.0));
  return [acc, stale, n, &buffer] {
    gtl::Tensor grads = buffer.grads();
    const gtl::Tensor batch = grads.clone();
    grads.copy_(*stale);
    for (int64_t m = 0; m < kMicroBatches; ++m) {
      const gtl::Tensor g = m == 0 ? batch : gtl::Tensor::full({n}, 0.0);
      if (acc->mode(m) == gtl::nn::GradMode::Overwrite) {
        grads.copy_(g);
      } else {
        gtl::ops::add_(grads, g);
      }
      acc->after_backward(m);
    }
    *stale = grads.clone();
  };
}
}  // namespace

int main(int argc, char** argv) {
  uint64_t data_seed = 0;
  std::string out;
  std::string sync = "bucketed";
  for (int i = 1; i + 1 < argc; i += 2) {
    const std::string flag = argv[i], value = argv[i + 1];
    if (flag == "--data-seed") data_seed = std::stoull(value);
    if (flag == "--out") out = value;
    if (flag == "--sync") sync = value;
  }
  if (out.empty() ||
      (sync != "bucketed" && sync != "flat" && sync != "naive" && sync != "no-sync")) {
    std::cerr << "usage: lab05_bucketed_processes --data-seed S --out PATH "
                 "[--sync bucketed|flat|naive|no-sync]\n";
    return 2;
  }
  try {
    const std::unique_ptr<lab05::Communicator> comm = gtl::dist::init_from_environment();
    GTL_CHECK(comm->backend() != "nccl", "lab05_bucketed_processes runs on the CPU (MPI)");
    comm->set_deterministic(true);
    lab05::TrainConfig config;
    config.data_seed = data_seed;
    const lab05::TrainResult result = lab05::train_lab_model(
        *comm, config,
        [&sync](lab05::Communicator& c, gtl::nn::Module& model,
                gtl::nn::ParameterBuffer& buffer) -> std::function<void()> {
          if (sync == "flat") return [&c, &buffer] { lab05::flat_ddp_sync(c, buffer.params()); };
          if (sync == "naive") return [&c, &buffer] { lab05::naive_ddp_sync(c, buffer.params()); };
          if (sync == "no-sync") return no_sync(c, buffer);
          auto ddp = std::make_shared<lab05::BucketedDdp>(c, model, buffer, kBucketBytes);
          return [ddp] { ddp->finish(); };
        });
    if (comm->rank() == 0) lab05::write_result(out, result, comm->backend(), comm->world_size());
    return 0;
  } catch (const std::exception& e) {
    std::cerr << "lab05_bucketed_processes: " << e.what() << "\n";
    return 1;
  }
}
