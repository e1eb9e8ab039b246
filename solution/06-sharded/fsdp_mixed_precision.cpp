// Lab 06, TODO 8: bf16 compute copies under FSDP.
//
// Why: the gathers are FSDP's largest traffic (TODO 4 counts them). Under mixed precision the unit
// computes in bf16 anyway, so the weights it computes on need be no more than bf16, while the fp32
// shards, the master weights AdamW updates, never change dtype.
#include "gtl/tensor/tensor.h"
#include "sharded.h"

namespace lab06 {

Tensor gather_bf16_values(Communicator& comm, const gtl::nn::FlatParameter& flat) {
  // SOLUTION(lab06) step 8: round the fp32 shard to bf16, then all-gather the bf16 shards
  const Tensor shard = flat.shard_values().to(gtl::DType::BFloat16);
  Tensor full = Tensor::empty({flat.padded_numel()}, gtl::DType::BFloat16, flat.device());
  comm.all_gather(shard, full);
  return full;
  // END SOLUTION(lab06)
}

int64_t bf16_gather_bytes_sent(const gtl::nn::FlatParameter& flat) {
  // SOLUTION(lab06) step 8 (bytes sent): on a ring, N - 1 shards of 2-byte elements
  return static_cast<int64_t>(flat.world_size() - 1) * flat.shard_size() * 2;
  // END SOLUTION(lab06)
}

}  // namespace lab06
