// Lab 05, TODO 5: bucketed DDP, each bucket's all-reduce overlapping the rest of the backward.
//
// Why buckets: one all-reduce per parameter pays the latency per parameter; one for the whole
// model can start only when backward is over. Buckets of a few hundred KiB to 25 MiB are big
// enough to run at full bandwidth and small enough to start early.
// Why reverse order: backward makes the last layer's gradients ready first, so buckets filled
// from the last parameter down become full one after another while earlier layers still compute.
// Why launch in bucket order: every rank must issue the same collectives in the same order (a
// collective is a rendezvous); gradients may become ready in another order on another rank.
#include <map>

#include "data_parallel.h"
#include "gtl/runtime/error.h"

namespace lab05 {

// SOLUTION(lab05) step 5a: the state the hook and finish() share.
struct BucketedDdp::State {
  std::map<std::string, int64_t> bucket_of;  // parameter name -> its bucket
  std::vector<int64_t> missing;              // per bucket: gradients not ready yet this step
  int64_t next_launch = 0;                   // the first bucket not launched yet
  std::vector<gtl::dist::Work> in_flight;
};
// END SOLUTION(lab05)

BucketedDdp::BucketedDdp(Communicator& comm, gtl::nn::Module& model,
                         const gtl::nn::ParameterBuffer& buffer, int64_t bucket_bytes)
    : comm_(comm), grads_(buffer.grads()), state_(std::make_unique<State>()) {
  GTL_CHECK(bucket_bytes > 0, "BucketedDdp: bucket_bytes must be positive");
  const std::vector<ParamRef> params = model.parameters();
  const std::vector<gtl::nn::ParameterBuffer::Slot>& slots = buffer.slots();
  GTL_CHECK(slots.size() == params.size(), "BucketedDdp: `buffer` is not this model's");
  // SOLUTION(lab05) step 5a: the buckets, and the hook that drives them.
  int64_t bytes = 0;
  for (int64_t i = static_cast<int64_t>(params.size()) - 1; i >= 0; --i) {
    if (bytes == 0) buckets_.emplace_back();
    Bucket& b = buckets_.back();
    b.params.push_back(i);
    state_->bucket_of[params[i].name] = static_cast<int64_t>(buckets_.size()) - 1;
    bytes += slots[i].numel * 4;
    if (bytes >= bucket_bytes) bytes = 0;
  }
  for (Bucket& b : buckets_) {  // the slice from the lowest slot to the end of the highest
    const auto& lo = slots[b.params.back()];
    const auto& hi = slots[b.params.front()];
    b.offset = lo.offset;
    b.numel = hi.offset + hi.numel - lo.offset;
    state_->missing.push_back(static_cast<int64_t>(b.params.size()));
  }
  gtl::nn::Hooks hooks;
  hooks.grad_ready = [this](const ParamRef& p) { on_grad_ready(p); };
  hooks_ = model.add_hooks(std::move(hooks));
  // END SOLUTION(lab05)
}

BucketedDdp::~BucketedDdp() = default;

void BucketedDdp::on_grad_ready(const ParamRef& param) {
  // SOLUTION(lab05) step 5b: launch every bucket that may go.
  auto it = state_->bucket_of.find(param.name);
  GTL_CHECK(it != state_->bucket_of.end(), "BucketedDdp: unknown parameter '" << param.name << "'");
  --state_->missing[it->second];
  while (state_->next_launch < static_cast<int64_t>(buckets_.size()) &&
         state_->missing[state_->next_launch] == 0) {
    const Bucket& b = buckets_[state_->next_launch];
    state_->in_flight.push_back(comm_.all_reduce_async(grads_.slice(b.offset, b.offset + b.numel),
                                                       gtl::dist::ReduceOp::Avg));
    ++state_->next_launch;
  }
  // END SOLUTION(lab05)
}

void BucketedDdp::finish() {
  // SOLUTION(lab05) step 5c: the averages complete, the object ready for the next backward.
  for (gtl::dist::Work& w : state_->in_flight) w.wait();
  state_->in_flight.clear();
  // Reset first, then throw: the object is ready for the next step either way.
  const int64_t never_launched =
      state_->next_launch;  // == the number of buckets when all were launched
  state_->next_launch = 0;
  for (std::size_t b = 0; b < buckets_.size(); ++b) {
    state_->missing[b] = static_cast<int64_t>(buckets_[b].params.size());
  }
  GTL_CHECK(never_launched == static_cast<int64_t>(buckets_.size()),
            "BucketedDdp::finish: bucket " << never_launched << " was never launched (a parameter "
                                           << "got no gradient this step)");
  // END SOLUTION(lab05)
}

}  // namespace lab05
