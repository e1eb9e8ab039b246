// Lab 05, data parallelism: what DDP does to every gradient, built from point-to-point messages
// up to bucketed all-reduces that overlap the backward pass.
//
// This header is part of the pristine lab (labs/05-data-parallel/include): do not edit it. Your
// files are in starter/05-data-parallel/, one per TODO; the map from TODO to file, test and check
// is in the handout, labs/05-data-parallel/README.md. Everything runs on in-process ranks
// (gtl::dist::run_ranks) on the CPU; TODO 7 runs the same training as processes under mpirun.
//
// The core's communicator (gtl/distributed/communicator.h) gives you send_recv, isend/irecv and
// the collectives. Each TODO's file must not use the core symbols that would answer it (TODO 1:
// RingCommunicator and Communicator's all_reduce / reduce_scatter / all_gather; TODO 2: the data
// loader's sharding, gtl::data::DataLoader; the full list per TODO is in the handout): the grader
// reads the symbols of each student FILE and scores the TODO 0 when the file uses one.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "gtl/distributed/communicator.h"
#include "gtl/nn/module.h"
#include "gtl/nn/parameter_buffer.h"

namespace lab05 {

using gtl::Tensor;
using gtl::dist::Communicator;
using gtl::optim::ParamRef;

// ---- 1. Ring all-reduce from point to point (ring_all_reduce.cpp) -------------------------------
// tensor (float32, contiguous, on the CPU; the same numel on every rank) becomes the element-wise
// SUM over all ranks, in place. With c = ceil(n / N), chunk i is elements [i*c, (i+1)*c) of the
// buffer: a chunk inside the tensor is a VIEW of it (no copy); only the ragged tail (a chunk
// running past n, or wholly past it) is a zero-padded chunk of c elements, copied back at the end.
// A reduce-scatter of N-1 steps, then an all-gather of N-1 steps. Every step is ONE
// comm.send_recv of one chunk (c elements) to rank r+1 and from rank r-1, so each rank sends
// exactly 2 (N-1) c * 4 bytes = 2(N-1)/N * S_padded, and nothing deadlocks on NCCL or MPI. Which
// chunk travels in which step is yours to work out. Memory: besides the caller's tensor the call
// allocates only the padded chunks and one receive chunk of c elements (the reduce-scatter adds an
// arriving chunk into one it holds), each once, all freed on return: a peak of
// (1 + padded chunks) * c * 4 bytes. No buffer per step, no temporary as large as the tensor.
void ring_all_reduce(Communicator& comm, const Tensor& tensor);

// ---- 2. Data sharding and identical initial weights (distributed_sampler.cpp) -----------------
// The sample indices rank `rank` of `world_size` visits in epoch `epoch`, in order. The epoch's
// order is a shuffled permutation of 0..dataset_size-1 that depends only on (seed, epoch): the
// same on every rank, and drawn afresh for every (seed, epoch) pair, so that on a data set of
// more than a handful of samples two pairs give different orders (a run with seed 8 must not
// replay seed 7's epochs one epoch late; the tests compare pairs on 50 samples). Uneven sizes
// are PADDED: the permutation is extended by repeating its first indices up to
// P = ceil(dataset_size / world_size) * world_size positions, and rank r takes positions r,
// r + world_size, r + 2 world_size, ... (P / world_size indices). So every rank has the same
// number of samples (a rank that ran out early would leave the others waiting in the
// all-reduce), the shards of one epoch are disjoint positions, and with world_size 1 the result is
// the epoch's permutation itself.
std::vector<int64_t> shard_indices(int64_t dataset_size, int rank, int world_size, uint64_t seed,
                                   int64_t epoch);

// Every rank's parameter values become rank `root`'s, bit for bit.
void broadcast_parameters(Communicator& comm, const std::vector<ParamRef>& params, int root = 0);

// ---- 3. Naive DDP (naive_ddp.cpp) -------------------------------------------------------------
// After backward: every gradient becomes the AVERAGE over ranks of that gradient, one
// all-reduce per parameter, in the order of `params`, carrying that gradient's own bytes.
// Gradients are float32 (the bits of the communicator's average) or float16 (finite wherever the
// average is representable, even where the sum over ranks is not).
void naive_ddp_sync(Communicator& comm, const std::vector<ParamRef>& params);

// ---- 4. Flat DDP (flat_ddp.cpp) ---------------------------------------------------------------
// After backward: every gradient becomes its average over ranks, through ONE all-reduce that
// carries exactly all the gradients' bytes (in the order of `params`). The gradients need not lie
// in one buffer: the lab's model keeps them in a ParameterBuffer, the tests also pass separate
// tensors. They may be on a GPU.
void flat_ddp_sync(Communicator& comm, const std::vector<ParamRef>& params);

// ---- 5. Bucketed DDP overlapped with backward (bucketed_ddp.cpp) --------------------------------
// One bucket: a contiguous slice [offset, offset + numel) of the flat gradient holding the
// gradients of `params` (indices into model.parameters(), in the order they were added).
struct Bucket {
  std::vector<int64_t> params;
  int64_t offset = 0;  // elements into buffer.grads()
  int64_t numel = 0;   // elements of the slice (the alignment padding between slots included)
};

class BucketedDdp {
 public:
  // Assigns the buckets ONCE, walking model.parameters() from the LAST to the first (the order
  // backward makes gradients ready): a parameter joins the open bucket, and the bucket is closed
  // as soon as the bytes of its gradients (numel * 4, padding not counted) reach bucket_bytes.
  // Then installs a grad_ready hook on `model`. `buffer` must be the model's ParameterBuffer.
  BucketedDdp(Communicator& comm, gtl::nn::Module& model, const gtl::nn::ParameterBuffer& buffer,
              int64_t bucket_bytes);
  ~BucketedDdp();

  const std::vector<Bucket>& buckets() const { return buckets_; }

  // From the grad_ready hook (once per parameter per backward). Each bucket's slice is averaged
  // over ranks by one asynchronous all-reduce (Avg). Every rank must issue the same all-reduces
  // in the same order (bucket order), whatever order its gradients arrive in, and each one as
  // early as that allows: no bucket may wait for the end of backward when it could go sooner.
  void on_grad_ready(const ParamRef& param);

  // Before the optimizer step: returns once every bucket's average is in the flat gradient, and
  // leaves the object ready for the next backward. When a bucket was never launched (a parameter
  // got no gradient this step) it throws gtl::Error naming the first such bucket ("bucket 1"),
  // and the object must still be ready for the next step, with nothing left in flight.
  void finish();

 private:
  Communicator& comm_;
  Tensor grads_;                 // the flat gradient
  std::vector<Bucket> buckets_;  // in launch order
  // What the hook and finish() share: yours to design (bucketed_ddp.cpp defines State; TODO 5a).
  struct State;
  std::unique_ptr<State> state_;
  gtl::nn::HookHandle hooks_;  // keeps the grad_ready hook installed while the object lives
};

// ---- 6. Gradient accumulation without sync (no_sync.cpp) ---------------------------------------
// k micro-batches per optimizer step: for i = 0 .. k-1 the caller runs micro-batch i's backward
// with mode(i), then calls after_backward(i); that is all it does to the gradients, step after
// step. Once a step's last after_backward has returned, the flat gradient holds that step's
// gradient: the average over ranks of the sum over its micro-batches (scale each micro-batch's
// loss by 1/k for the mean). At most ONE all-reduce per optimizer step.
class NoSyncAccumulator {
 public:
  NoSyncAccumulator(Communicator& comm, const gtl::nn::ParameterBuffer& buffer,
                    int64_t micro_batches);
  // How micro-batch `micro_batch`'s backward writes into the gradients (gtl::nn::GradMode).
  gtl::nn::GradMode mode(int64_t micro_batch) const;
  void after_backward(int64_t micro_batch);

 private:
  Communicator& comm_;
  Tensor grads_;
  int64_t micro_batches_;
};

// ---- 7. Real processes (ddp_main.cpp: the program lab05_ddp_train) -----------------------------
// The program's body: this process is one rank of the lab's training (ddp_training.h) in the job
// the launcher started (a world of one without a launcher), and rank 0's result file must equal
// the in-process run on as many ranks bit for bit.
int ddp_main(int argc, char** argv);

}  // namespace lab05
