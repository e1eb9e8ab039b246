// Lab 06, TODO 8: bf16 compute copies under FSDP.
//
// Why: FSDP all-gathers every unit twice per step (forward and backward), so the gathers are its
// largest traffic. The unit computes in bf16 anyway under mixed precision, so gathering the bf16
// copy instead of the fp32 values halves those bytes and the memory of a gathered unit, while the
// fp32 shards, the master weights AdamW updates, never change dtype.
#include "gtl/tensor/tensor.h"
#include "sharded.h"

namespace lab06 {

Tensor gather_bf16_values(Communicator& comm, const gtl::nn::FlatParameter& flat) {
  // SOLUTION(lab06) step 8a: round the fp32 shard to bf16, then all-gather the bf16 shards
  const Tensor shard = flat.shard_values().to(gtl::DType::BFloat16);
  Tensor full = Tensor::empty({flat.padded_numel()}, gtl::DType::BFloat16, flat.device());
  comm.all_gather(shard, full);
  return full;
  // END SOLUTION(lab06)
}

int64_t bf16_gather_bytes_sent(const gtl::nn::FlatParameter& flat) {
  // SOLUTION(lab06) step 8b: on a ring each rank forwards N - 1 shards of 2-byte elements
  return static_cast<int64_t>(flat.world_size() - 1) * flat.shard_size() * 2;
  // END SOLUTION(lab06)
}

}  // namespace lab06
