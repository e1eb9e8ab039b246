// One flat buffer for parameters, gradients and the half compute copy (see parameter_buffer.h).
#include "gtl/nn/parameter_buffer.h"

#include "gtl_reference_guard.h"  // grader/channel: the references refuse to run in a student call

#include <sstream>

#include "gtl/optim/master_weights.h"

namespace gtl::nn {

namespace {
constexpr int64_t kAlign = 64;  // elements: 256 bytes of float32
}  // namespace

ParameterBuffer::ParameterBuffer(Module& model, Device device) : model_(model) {
  gtl::grading::reference_guard("gtl::nn::ParameterBuffer::ParameterBuffer");
  std::vector<ParamRef*> refs = model.parameter_slots();
  int64_t total = 0;
  for (ParamRef* p : refs) {
    GTL_CHECK(p->value.dtype() == DType::Float32, "ParameterBuffer: '"
                                                      << p->name << "' must be float32, got "
                                                      << dtype_name(p->value.dtype()));
    slots_.push_back(Slot{p->name, p->value.shape(), total, p->value.numel()});
    total += (p->value.numel() + kAlign - 1) / kAlign * kAlign;
  }
  values_ = Tensor::zeros({total}, DType::Float32, device);
  grads_ = Tensor::zeros({total}, DType::Float32, device);
  for (std::size_t i = 0; i < refs.size(); ++i) {
    Tensor value = slots_[i].view(values_);
    value.copy_(refs[i]->value);
    refs[i]->value = value;
    refs[i]->grad = slots_[i].view(grads_);
    refs[i]->compute = Tensor();
  }
}

void ParameterBuffer::enable_compute_copy(DType dtype) {
  GTL_CHECK(dtype == DType::Float16 || dtype == DType::BFloat16,
            "ParameterBuffer: a compute copy is float16 or bfloat16, got " << dtype_name(dtype));
  compute_ = Tensor::zeros(values_.shape(), dtype, values_.device());
  std::vector<ParamRef*> refs = model_.parameter_slots();
  for (std::size_t i = 0; i < refs.size(); ++i) refs[i]->compute = slots_[i].view(compute_);
  refresh_compute();
}

void ParameterBuffer::refresh_compute() const {
  if (compute_.defined()) optim::detail::convert_into(values_, compute_);
}

void ParameterBuffer::zero_grad() const {
  Tensor(grads_).zero_();
}

std::vector<ParamRef> ParameterBuffer::params() const {
  return model_.parameters();
}

std::string ParameterBuffer::memory_report() const {
  std::ostringstream os;
  os << slots_.size() << " parameter tensors, " << values_.numel() << " elements: parameters "
     << format_bytes(static_cast<int64_t>(values_.nbytes())) << ", gradients "
     << format_bytes(static_cast<int64_t>(grads_.nbytes()));
  if (compute_.defined()) {
    os << ", " << dtype_name(compute_.dtype()) << " compute copy "
       << format_bytes(static_cast<int64_t>(compute_.nbytes()));
  }
  return os.str();
}

}  // namespace gtl::nn
