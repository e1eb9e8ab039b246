// FlatParameter: the parameters of one FSDP unit in ONE flat buffer, padded so that it shards
// evenly across N ranks, with a persistent shard per rank and full buffers that come and go.
//
//   nn::FlatParameter flat(block, Device::cuda(), comm.world_size(), comm.rank());
//   flat.values(), flat.grads()               the full buffers, while they exist; the layers'
//                                             weights and gradients are views into them
//   flat.materialize_values(), release_values()   make (uninitialised) or drop the full values
//   flat.materialize_grads(), release_grads()     make (zeroed) or drop the full gradient
//   flat.shard_values(), flat.shard_grads()   this rank's persistent chunk of each
//   flat.shard_param()                        the shard as an optimizer parameter (real
//                                             elements only; none when it is all padding);
//                                             its gradient: shard_grads(), or without a
//                                             gradient shard (ZeRO-1) chunk rank() of grads()
//
// Which of these a sharding strategy calls, when, and with which collective is what lab 06 asks
// (ZeRO-1, ZeRO-2, FSDP).
//
// Mixed precision (Options::compute = bf16 or fp16), as Megatron-LM's distributed optimizer and
// PyTorch FSDP's MixedPrecision lay it out: the full values are the half copy EVERY layer of the
// unit reads (weights, biases, LayerNorms, embeddings: the layers take half parameters and widen
// them to float32 where they compute in float32), and the float32 shard is this rank's master of
// its chunk, the only float32 values there are. The optimizer updates the master (shard_param()),
// and gather_input() rounds it into the rank's own chunk of the half values, which an all-gather
// then fills in place: half the bytes of a float32 all-gather, and no float32 copy of the model.
// The gradients stay float32 (what the optimizer and a reduce-scatter sum need).
//
// Why a flat, padded buffer (PyTorch FSDP's FlatParameter): a unit's weights are gathered and its
// gradients reduce-scattered in ONE collective each, and a ring collective cuts its buffer into N
// equal chunks (dist/ring.h). Padding the buffer with zeros to a multiple of N makes chunk r
// exactly rank r's shard for every N (3, 5, 7 ...), so every rank's shard has the same size.
//
// clang-format off
// Layout, N = 3, 7 real elements:   [ a a a | b b b | c 0 0 ]   padded_numel 9, shard_size 3
//                                      rank 0  rank 1  rank 2 (1 real element, 2 padding)
// clang-format on
// Parameters are packed with no gaps (unlike ParameterBuffer's 64-element alignment), so the real
// elements are exactly [0, numel) and the only padding is the tail: shard_param() can then leave
// the padding out of the optimizer entirely. When N > numel, the last ranks own only padding and
// shard_param() returns nullopt for them.
//
// Why release frees the Storage's bytes and keeps the Storage (PyTorch's storage().resize_(0)):
// each layer's ParamRef holds views into the full buffers. Storage::release() returns the bytes
// to the allocator the tensors came from (current_allocator(device) at construction), so that
// allocator's MemoryStats drop by exactly the buffer's size: this is how a rank's statistics show
// ZeRO's savings. Materialising allocates again into the same Storage object, and every view,
// reading the storage's pointer at each use, sees the new bytes. Using a released view throws
// "... released (FSDP freed it) ...".
//
// Contents after materialising: values are UNSPECIFIED (fresh bytes; the all-gather, or copies
// into full_values_chunk(r), overwrite all of them, padding included, since the shards' padding
// is zero); gradients are ZERO (backward with GradMode::Accumulate adds to them, and the padding
// that reduce-scatter sums must be zero).
//
// Units must not overlap: each parameter belongs to one FlatParameter. To wrap nested units
// (each block a unit, the root unit holding what is left), pass the root's parameter_slots()
// minus the blocks' to the ParamRef* constructor.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "gtl/nn/module.h"
#include "gtl/nn/parameter_buffer.h"

namespace gtl::nn {

// Where each rank's shard lies in a flat buffer of `numel` real elements padded for
// `world_size` ranks. Pure arithmetic: the same on every rank.
struct ShardLayout {
  int64_t numel = 0;   // real elements
  int world_size = 1;  // N

  ShardLayout(int64_t numel, int world_size);
  int64_t padded_numel() const { return shard_size() * world_size; }  // a multiple of N
  int64_t padding() const { return padded_numel() - numel; }
  int64_t shard_size() const { return (numel + world_size - 1) / world_size; }  // ceil(numel/N)
  // Rank r's shard is [shard_offset(r), shard_offset(r) + shard_size()).
  int64_t shard_offset(int rank) const;
  // How many of rank r's shard elements are real (the rest is padding): 0 .. shard_size().
  int64_t real_numel(int rank) const;
  // The rank whose shard holds element i of the padded buffer.
  int owner(int64_t i) const;
};

class FlatParameter {
 public:
  using Slot = FlatSlot;
  struct Options {
    // Keep a persistent shard of the gradients (ZeRO-2/3, FSDP). ZeRO-1 keeps the full gradient
    // and shards only the optimizer state, so it needs none.
    bool shard_grads = true;
    // The dtype of the full values: float32 (the values are the weights), or bf16 / fp16 (mixed
    // precision: the full values are the half copy the layers read, the shard the master).
    DType compute = DType::Float32;
  };

  // Moves every parameter of `unit` into a flat buffer on `device` padded to a multiple of
  // world_size, re-points the unit's ParamRefs to views of the full values and gradients (both
  // materialised; gradients zero), and copies chunk `rank` into this rank's shard. With a half
  // compute dtype the shard keeps the float32 values and the full values are their rounding.
  FlatParameter(Module& unit, Device device, int world_size, int rank, Options options);
  FlatParameter(Module& unit, Device device, int world_size, int rank)
      : FlatParameter(unit, device, world_size, rank, Options{}) {}
  // The same over an explicit list of parameters (nested units); `name` names the shard param.
  FlatParameter(const std::vector<ParamRef*>& params, std::string name, Device device,
                int world_size, int rank, Options options);

  // ---- layout ------------------------------------------------------------------------------
  const ShardLayout& layout() const { return layout_; }
  int64_t numel() const { return layout_.numel; }
  int64_t padded_numel() const { return layout_.padded_numel(); }
  int64_t shard_size() const { return layout_.shard_size(); }
  int world_size() const { return layout_.world_size; }
  int rank() const { return rank_; }
  const std::string& name() const { return name_; }
  const std::vector<Slot>& slots() const { return slots_; }
  Device device() const { return shard_values_.device(); }
  DType compute() const { return values_.dtype(); }  // the full values' dtype

  // ---- the persistent shard ----------------------------------------------------------------
  // [shard_size] tensors of their own, allocated once: this rank's chunk of values and grads,
  // float32 (with a half compute dtype, the values' shard is the master).
  const Tensor& shard_values() const { return shard_values_; }
  const Tensor& shard_grads() const { return shard_grads_; }  // undefined without shard_grads
  // This rank's real elements (views of the shards), named name(); nullopt when the shard is
  // all padding. The optimizer, clipping and checkpoints take this, never the padding.
  std::optional<ParamRef> shard_param() const;

  // ---- the full buffers ----------------------------------------------------------------------
  // [padded_numel] tensors whose storage is freed and re-allocated; the unit's ParamRefs are views.
  // The values are in the compute dtype, the gradients float32.
  const Tensor& values() const { return values_; }
  const Tensor& grads() const { return grads_; }
  bool has_values() const { return !values_.storage()->released(); }
  bool has_grads() const { return !grads_.storage()->released(); }
  // Allocates the full values (contents unspecified: gather into them). No-op if present.
  void materialize_values();
  // Returns the full values' bytes to the allocator. No-op if already released.
  void release_values();
  // Allocates the full gradients, zeroed. No-op if present (the gradients are kept).
  void materialize_grads();
  // Frees the full gradients (set_to_none between steps). No-op if already released.
  void release_grads();

  // Chunk r of the full buffers: [shard_offset(r), shard_offset(r) + shard_size()). Views, valid
  // across release / materialise cycles. A collective's output may be the rank's own chunk of
  // its input (in place: the communicator and NCCL allow it).
  Tensor full_values_chunk(int r) const;
  Tensor full_grads_chunk(int r) const;
  // shard_values = chunk rank() of the full values (e.g. after loading full weights; with a half
  // compute dtype, widened).
  void shard_from_full();
  // What this rank gives an all-gather of the full values: shard_values() itself in float32; with
  // a half compute dtype, chunk rank() of the full values, rewritten now as round(shard_values())
  // (the all-gather then runs in place). The full values must be materialised.
  Tensor gather_input() const;

  // The unit's parameters (views into the full buffers), by name.
  std::vector<ParamRef> params() const;
  // "unit 'name': 3 tensors, 7 elements padded to 9 for 3 ranks; shard 3 elements (...)".
  std::string memory_report() const;

 private:
  std::vector<Slot> slots_;
  std::string name_;
  ShardLayout layout_;
  int rank_;
  Tensor values_, grads_;
  Tensor shard_values_, shard_grads_;
};

}  // namespace gtl::nn
