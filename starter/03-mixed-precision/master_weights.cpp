// Lab 03, TODO 4: float32 master weights behind a half-precision model.
//
// An update is often 1e-3 to 1e-5 of the weight it changes. From 1 upwards fp16 numbers are 2^-10
// apart, just below 1 2^-11 (bf16: 2^-7 and 2^-8): w + u with |u| below half the spacing on its
// side rounds back to w, so stepping half weights drops every small update, forever. The
// optimizer therefore steps a float32 master, where small updates accumulate, and the model gets
// round(master) after each step: once the accumulated change crosses half an ulp, the model sees
// it.
#include "gtl/tensor/half.h"
#include "mixed_precision.h"

namespace lab03 {

// TODO(lab03) step 4: MasterWeights: the masters, the gradients widened, the model refreshed.
// Spec (MasterWeights.*): the header's contract for the three calls, checked bit for bit against
// the core's master weights and, step after step, against float32 training of the lab model with
// its matrices in bf16 and its other parameters in float32; the tests count the bytes building
// the masters allocates. The conversions are yours to write: the elements of an fp16 or bf16
// tensor are uint16_t patterns, and gtl/tensor/half.h has gtl::half(float) and
// gtl::bfloat16(float) (their member `bits`), half_bits_to_float and bfloat16_bits_to_float.
// Decide, per parameter, what its master must own and what it can share with the model, what
// each call then reads and writes, and what rounding each direction needs. About 40 lines.
MasterWeights::MasterWeights(std::vector<ParamRef> model_params) : model_(std::move(model_params)) {
  for (const ParamRef& p : model_) {
    GTL_CHECK((p.value.dtype() == DType::Float16 || p.value.dtype() == DType::BFloat16 ||
               p.value.dtype() == DType::Float32) &&
                  p.grad.dtype() == p.value.dtype() && !p.value.is_cuda(),
              "MasterWeights: expected fp16, bf16 or float32 CPU values and gradients of one "
              "dtype, got "
                  << p.value.str(0) << " and " << p.grad.str(0));
  }
  throw gtl::Error("TODO(lab03) step 4: MasterWeights is not implemented");
}

void MasterWeights::grads_to_master() const {
  throw gtl::Error("TODO(lab03) step 4: MasterWeights::grads_to_master is not implemented");
}

void MasterWeights::refresh_model() const {
  throw gtl::Error("TODO(lab03) step 4: MasterWeights::refresh_model is not implemented");
}
// END TODO(lab03)

}  // namespace lab03
