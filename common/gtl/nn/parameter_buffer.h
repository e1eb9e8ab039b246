// ParameterBuffer: every parameter of a model in ONE flat tensor, every gradient in another
// (llm.c's layout), with each layer's ParamRef re-pointed to views into them.
//
//   nn::ParameterBuffer buffer(model, Device::cuda());   // moves the model to the GPU
//   buffer.zero_grad();                                  // one fill for the whole model
//   all_reduce(buffer.grads());                          // DDP: one call (or slices = buckets)
//
// Why one buffer: what later labs do to "all gradients" becomes one call on one tensor. Zeroing,
// the global norm, an all-reduce, a DDP bucket (a contiguous slice of the flat gradient, filled in
// reverse layer order), an FSDP flat parameter (a slice sharded across ranks) and a checkpoint
// are each one operation, with no list of tensors to walk and no per-tensor launch. The views
// alias the buffer: writing through a layer's weight changes the flat tensor and vice versa.
//
// Each slot starts at a multiple of 64 elements (256 bytes in float32), so vectorised kernels
// can assume aligned views; the padding stays zero.
//
// Mixed precision: enable_compute_copy(bf16) adds a third flat buffer holding round(value) in
// half precision and sets every ParamRef::compute to its view. Optimizers rewrite that copy in
// the same fused pass as the float32 update (optim/master_weights.h describes the scheme), and
// Linear / Conv2d read it instead of casting their weights every step (precision.h).
#pragma once

#include <string>
#include <vector>

#include "gtl/nn/module.h"

namespace gtl::nn {

// Where one parameter lies in a flat buffer (ParameterBuffer, FlatParameter), and its view there.
struct FlatSlot {
  std::string name;
  Shape shape;
  int64_t offset = 0;  // elements into the flat buffers
  int64_t numel = 0;

  Tensor view(const Tensor& flat) const {
    return flat.slice(offset, offset + numel).reshape(shape);
  }
};

class ParameterBuffer {
 public:
  using Slot = FlatSlot;

  // Copies every parameter of `model` into one flat float32 tensor on `device`, allocates the
  // flat gradient (zeros) and re-points the model's ParamRefs to views of both.
  ParameterBuffer(Module& model, Device device);

  const Tensor& values() const { return values_; }
  const Tensor& grads() const { return grads_; }
  const Tensor& compute() const { return compute_; }  // undefined without a compute copy
  const std::vector<Slot>& slots() const { return slots_; }
  Device device() const { return values_.device(); }

  // Adds (or changes the dtype of) the half-precision compute copy: fp16 or bf16.
  void enable_compute_copy(DType dtype);
  // compute = round(values): after loading values from a checkpoint or editing them by hand.
  void refresh_compute() const;
  void zero_grad() const;

  // The model's parameters (views into the buffers), by name: checkpoints and hooks.
  std::vector<ParamRef> params() const;
  // The whole model as ONE parameter "flat" (values, grads, compute copy): the optimizer, the
  // loss scaler and gradient clipping then each make one pass (one kernel) over the model.
  ParamRef flat_param() const { return ParamRef{values_, grads_, compute_, "flat"}; }
  // "parameters 1.23 MiB, gradients 1.23 MiB, compute copy ..." for the trainer's memory report.
  std::string memory_report() const;

 private:
  Module& model_;
  std::vector<Slot> slots_;
  Tensor values_, grads_, compute_;
};

}  // namespace gtl::nn
