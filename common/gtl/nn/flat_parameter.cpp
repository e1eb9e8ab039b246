// A padded flat parameter with a persistent shard and releasable full buffers (see
// flat_parameter.h).
#include "gtl/nn/flat_parameter.h"

#include "gtl_reference_guard.h"  // grader/channel: the references refuse to run in a student call

#include <algorithm>
#include <sstream>
#include <utility>

#include "gtl/optim/master_weights.h"

namespace gtl::nn {

// ---- shard arithmetic ---------------------------------------------------------------------------

ShardLayout::ShardLayout(int64_t numel_, int world_size_) : numel(numel_), world_size(world_size_) {
  gtl::grading::reference_guard("gtl::nn::ShardLayout::ShardLayout");
  GTL_CHECK(world_size >= 1, "ShardLayout: world size must be at least 1, got " << world_size);
  GTL_CHECK(numel >= 0, "ShardLayout: negative element count " << numel);
}

int64_t ShardLayout::shard_offset(int rank) const {
  GTL_CHECK(rank >= 0 && rank < world_size,
            "ShardLayout: rank " << rank << " out of range for world size " << world_size);
  return rank * shard_size();
}

int64_t ShardLayout::real_numel(int rank) const {
  return std::clamp<int64_t>(numel - shard_offset(rank), 0, shard_size());
}

int ShardLayout::owner(int64_t i) const {
  GTL_CHECK(i >= 0 && i < padded_numel(), "ShardLayout: element " << i << " out of range for "
                                                                  << padded_numel()
                                                                  << " padded elements");
  return static_cast<int>(i / shard_size());
}

// ---- construction -------------------------------------------------------------------------------

namespace {

std::string unit_name(const Module& unit) {
  return unit.path().empty() ? "flat" : unit.path() + ".flat";
}

}  // namespace

FlatParameter::FlatParameter(Module& unit, Device device, int world_size, int rank, Options options)
    : FlatParameter(unit.parameter_slots(), unit_name(unit), device, world_size, rank, options) {}

FlatParameter::FlatParameter(const std::vector<ParamRef*>& params, std::string name, Device device,
                             int world_size, int rank, Options options)
    : name_(std::move(name)), layout_(0, world_size), rank_(rank) {
  GTL_CHECK(rank >= 0 && rank < world_size, "FlatParameter '" << name_ << "': rank " << rank
                                                              << " out of range for world size "
                                                              << world_size);
  int64_t total = 0;
  for (const ParamRef* p : params) {
    GTL_CHECK(p->value.dtype() == DType::Float32,
              "FlatParameter '" << name_ << "': '" << p->name << "' must be float32, got "
                                << dtype_name(p->value.dtype()));
    slots_.push_back(Slot{p->name, p->value.shape(), total, p->value.numel()});
    total += p->value.numel();  // packed: the real elements are exactly [0, total)
  }
  GTL_CHECK(total > 0, "FlatParameter '" << name_ << "': the unit has no parameters to shard");
  GTL_CHECK(is_floating(options.compute),
            "FlatParameter '" << name_ << "': the compute dtype must be float32, "
                              << "float16 or bfloat16, got " << dtype_name(options.compute));
  layout_ = ShardLayout(total, world_size);

  const Shape full = {layout_.padded_numel()};
  Tensor values32 = Tensor::zeros(full, DType::Float32, device);  // the padding is zero from here
  for (std::size_t i = 0; i < params.size(); ++i) slots_[i].view(values32).copy_(params[i]->value);
  // Under mixed precision the float32 values live on only as this rank's shard (the master); the
  // full values are their rounding, and the float32 buffer is freed on return.
  values_ = options.compute == DType::Float32 ? values32 : values32.to(options.compute);
  grads_ = Tensor::zeros(full, DType::Float32, device);
  for (std::size_t i = 0; i < params.size(); ++i) {
    params[i]->value = slots_[i].view(values_);
    params[i]->grad = slots_[i].view(grads_);
    params[i]->compute = Tensor();
  }
  shard_values_ = Tensor::empty({layout_.shard_size()}, DType::Float32, device);
  const int64_t start = layout_.shard_offset(rank_);
  shard_values_.copy_(values32.slice(start, start + layout_.shard_size()));
  if (options.shard_grads) {
    shard_grads_ = Tensor::zeros({layout_.shard_size()}, DType::Float32, device);
  }
}

// ---- the persistent shard -----------------------------------------------------------------------

std::optional<ParamRef> FlatParameter::shard_param() const {
  const int64_t real = layout_.real_numel(rank_);
  if (real == 0) return std::nullopt;
  // Without a gradient shard (ZeRO-1) the gradient is this rank's chunk of the full gradient.
  const Tensor grad = shard_grads_.defined() ? shard_grads_ : full_grads_chunk(rank_);
  return ParamRef{shard_values_.slice(0, real), grad.slice(0, real), Tensor(), name_};
}

// ---- the full buffers ---------------------------------------------------------------------------

void FlatParameter::materialize_values() {
  gtl::grading::reference_guard("gtl::nn::FlatParameter::materialize_values");
  if (has_values()) return;
  values_.storage()->allocate(values_.nbytes());
}

void FlatParameter::release_values() {
  values_.storage()->release();
}

void FlatParameter::materialize_grads() {
  if (has_grads()) return;
  grads_.storage()->allocate(grads_.nbytes());
  Tensor(grads_).zero_();  // backward may accumulate, and reduce-scatter sums the padding
}

void FlatParameter::release_grads() {
  grads_.storage()->release();
}

Tensor FlatParameter::full_values_chunk(int r) const {
  const int64_t start = layout_.shard_offset(r);
  return values_.slice(start, start + layout_.shard_size());
}

Tensor FlatParameter::full_grads_chunk(int r) const {
  const int64_t start = layout_.shard_offset(r);
  return grads_.slice(start, start + layout_.shard_size());
}

void FlatParameter::shard_from_full() {
  GTL_CHECK(has_values(), "FlatParameter '" << name_
                                            << "': shard_from_full needs the full values; they "
                                               "are released (materialise and gather them first)");
  optim::detail::convert_into(full_values_chunk(rank_), shard_values_);
}

Tensor FlatParameter::gather_input() const {
  if (compute() == DType::Float32) return shard_values_;
  GTL_CHECK(has_values(), "FlatParameter '"
                              << name_ << "': gather_input writes the rank's chunk of the full "
                              << dtype_name(compute())
                              << " values, which are released (materialise them first)");
  Tensor chunk = full_values_chunk(rank_);
  optim::detail::convert_into(shard_values_, chunk);  // round in place: no buffer of its own
  return chunk;
}

std::vector<ParamRef> FlatParameter::params() const {
  std::vector<ParamRef> out;
  for (const Slot& s : slots_) out.push_back(ParamRef{s.view(values_), s.view(grads_), {}, s.name});
  return out;
}

std::string FlatParameter::memory_report() const {
  auto bytes = [](const Tensor& t) { return format_bytes(static_cast<int64_t>(t.nbytes())); };
  std::ostringstream os;
  os << "unit '" << name_ << "': " << slots_.size() << " tensors, " << numel()
     << " elements padded to " << padded_numel() << " for " << world_size() << " ranks; rank "
     << rank_ << " shard " << shard_size() << " elements (" << layout_.real_numel(rank_)
     << " real): values " << bytes(shard_values_)
     << (compute() == DType::Float32 ? "" : " (float32 master)");
  if (shard_grads_.defined()) os << ", gradients " << bytes(shard_grads_);
  os << "; full values " << bytes(values_)
     << (compute() == DType::Float32 ? "" : std::string(" ") + dtype_name(compute()))
     << (has_values() ? " (materialised)" : " (released)") << ", full gradients " << bytes(grads_)
     << (has_grads() ? " (materialised)" : " (released)");
  return os.str();
}

}  // namespace gtl::nn
