// Ring collectives over a point-to-point transport (see ring.h for the algorithms and their
// traffic). Every step names its neighbours explicitly, so the schedule reads like the
// textbook figure: send right, receive from the left.
#include "gtl/dist/ring.h"

#include <algorithm>

namespace gtl::dist {

namespace {
int mod(int a, int n) {
  return ((a % n) + n) % n;
}
}  // namespace

Tensor RingCommunicator::chunk(const Tensor& flat, int index) const {
  const int n = world_size();
  const int i = mod(index, n);
  const int64_t numel = flat.numel();
  return flat.slice(i * numel / n, (i + 1) * numel / n);
}

void RingCommunicator::ring_reduce_scatter(const Tensor& flat, ReduceOp op, int shift,
                                           const std::string& name) {
  const int n = world_size(), r = rank();
  const int right = mod(r + 1, n), left = mod(r - 1, n);
  // Sum/Max/Min while travelling; Avg is a sum divided once at the end by the caller.
  const ReduceOp step_op = op == ReduceOp::Avg ? ReduceOp::Sum : op;
  for (int s = 0; s < n - 1; ++s) {
    exchange(chunk(flat, r - s + shift), right, chunk(flat, r - s - 1 + shift), left, &step_op,
             name);
  }
}

void RingCommunicator::ring_all_gather(const Tensor& flat, int shift, const std::string& name) {
  const int n = world_size(), r = rank();
  const int right = mod(r + 1, n), left = mod(r - 1, n);
  for (int s = 0; s < n - 1; ++s) {
    exchange(chunk(flat, r + 1 - s + shift), right, chunk(flat, r - s + shift), left, nullptr,
             name);
  }
}

void RingCommunicator::do_all_reduce(const Tensor& tensor, ReduceOp op) {
  const Tensor flat = tensor.flatten();
  ring_reduce_scatter(flat, op, 0, "all_reduce");
  // Rank r now owns the finished chunk r+1: divide it once, then share it.
  if (op == ReduceOp::Avg) divide_(chunk(flat, rank() + 1), world_size());
  ring_all_gather(flat, 0, "all_reduce");
}

void RingCommunicator::do_reduce_scatter(const Tensor& input, const Tensor& output, ReduceOp op) {
  // The ring reduces in place; work on a scratch copy so that `input` stays untouched.
  Tensor scratch = Tensor::empty({input.numel()}, input.dtype(), input.device());
  scratch.copy_async_(input.flatten(), current_stream());
  // shift -1: rank r ends owning chunk r, the one reduce_scatter promises it.
  ring_reduce_scatter(scratch, op, -1, "reduce_scatter");
  Tensor mine = chunk(scratch, rank());
  if (op == ReduceOp::Avg) divide_(mine, world_size());
  output.flatten().copy_async_(mine, current_stream());
}

void RingCommunicator::do_all_gather(const Tensor& input, const Tensor& output) {
  const Tensor flat = output.flatten();
  chunk(flat, rank()).copy_async_(input.flatten(), current_stream());
  // shift -1: the first chunk rank r sends is its own, chunk r.
  ring_all_gather(flat, -1, "all_gather");
}

void RingCommunicator::do_broadcast(const Tensor& tensor, int root) {
  const int n = world_size();
  if (n == 1) return;
  const int pos = mod(rank() - root, n);  // distance from the root along the chain
  const Tensor flat = tensor.flatten();
  // Pipelining: pieces of 1 MiB let rank r+1 forward piece k while rank r sends piece k+1.
  const int64_t piece = std::max<int64_t>(1, (int64_t{1} << 20) / int64_t(tensor.element_size()));
  for (int64_t begin = 0; begin < std::max<int64_t>(flat.numel(), 1); begin += piece) {
    const Tensor part = flat.slice(begin, std::min(flat.numel(), begin + piece));
    if (pos > 0) recv_chunk(part, mod(rank() - 1, n), nullptr, "broadcast");
    if (pos < n - 1) send_chunk(part, mod(rank() + 1, n), "broadcast");
  }
}

void RingCommunicator::do_barrier() {
  const int n = world_size();
  if (n == 1) return;
  const Tensor token = Tensor::empty({0}, DType::Int32, Device::cpu());
  const int right = mod(rank() + 1, n), left = mod(rank() - 1, n);
  // Lap 1: when the token is back at rank 0, every rank has arrived. Lap 2: release them all.
  for (int lap = 0; lap < 2; ++lap) {
    if (rank() == 0) {
      send_chunk(token, right, "barrier");
      recv_chunk(token, left, nullptr, "barrier");
    } else {
      recv_chunk(token, left, nullptr, "barrier");
      send_chunk(token, right, "barrier");
    }
  }
}

}  // namespace gtl::dist
