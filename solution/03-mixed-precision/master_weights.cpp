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

// SOLUTION(lab03) step 4
namespace {
// One element of a half tensor (fp16 or bf16) as float, and a float rounded into one.
float load_half(const Tensor& t, int64_t i) {
  const uint16_t b = static_cast<const uint16_t*>(t.data_ptr())[i];
  return t.dtype() == DType::Float16 ? gtl::half_bits_to_float(b) : gtl::bfloat16_bits_to_float(b);
}
void store_half(const Tensor& t, int64_t i, float v) {
  static_cast<uint16_t*>(t.data_ptr())[i] =
      t.dtype() == DType::Float16 ? gtl::half(v).bits : gtl::bfloat16(v).bits;
}
}  // namespace

MasterWeights::MasterWeights(std::vector<ParamRef> model_params) : model_(std::move(model_params)) {
  for (const ParamRef& p : model_) {
    GTL_CHECK((p.value.dtype() == DType::Float16 || p.value.dtype() == DType::BFloat16 ||
               p.value.dtype() == DType::Float32) &&
                  p.grad.dtype() == p.value.dtype() && !p.value.is_cuda(),
              "MasterWeights: expected fp16, bf16 or float32 CPU values and gradients of one "
              "dtype, got "
                  << p.value.str(0) << " and " << p.grad.str(0));
  }
  for (const ParamRef& p : model_) {
    if (p.value.dtype() == DType::Float32) {  // its own master: the optimizer steps it in place
      masters_.push_back(p);
      continue;
    }
    Tensor value = Tensor::empty(p.value.shape());
    for (int64_t i = 0; i < value.numel(); ++i) value.data<float>()[i] = load_half(p.value, i);
    masters_.push_back(ParamRef{value, Tensor::zeros(p.value.shape()), Tensor(), p.name});
  }
}

void MasterWeights::grads_to_master() const {
  for (std::size_t k = 0; k < model_.size(); ++k) {
    if (model_[k].grad.dtype() == DType::Float32) continue;
    float* g = masters_[k].grad.data<float>();
    for (int64_t i = 0; i < masters_[k].grad.numel(); ++i) g[i] = load_half(model_[k].grad, i);
  }
}

void MasterWeights::refresh_model() const {
  for (std::size_t k = 0; k < model_.size(); ++k) {
    if (model_[k].value.dtype() == DType::Float32) continue;
    const float* v = masters_[k].value.data<float>();
    for (int64_t i = 0; i < masters_[k].value.numel(); ++i) store_half(model_[k].value, i, v[i]);
  }
}
// END SOLUTION(lab03)

}  // namespace lab03
