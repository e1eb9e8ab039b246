// Ring collectives over a point-to-point transport (see ring.h for the algorithms and their
// traffic). Every step names its neighbours explicitly, so the schedule reads like the
// textbook figure: send right, receive from the left.
#include "gtl/distributed/ring.h"

#include <algorithm>
#include <memory>
#include <vector>

#include "gtl_reference_guard.h"  // grader/channel: the references refuse to run in a student call

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

Communicator::Completion RingCommunicator::do_isend(const Tensor& tensor, int dst) {
  std::shared_ptr<PostedSend> posted = post_send(tensor, dst, "send");
  return {[this, posted] { complete_send(*posted); },
          [this, posted] { return send_completed(*posted); }};
}

void RingCommunicator::ordered_reduce_scatter(const Tensor& flat, const Tensor& acc, ReduceOp op,
                                              const std::string& name) {
  const int n = world_size(), r = rank();
  const ReduceOp step_op = op == ReduceOp::Avg ? ReduceOp::Sum : op;
  // Every send at once: owner q takes from rank 0 first, then 1, ..., whatever order we post in.
  std::vector<std::shared_ptr<PostedSend>> sends;
  for (int s = 1; s < n; ++s) sends.push_back(post_send(chunk(flat, r + s), mod(r + s, n), name));
  const Tensor mine = chunk(flat, r);
  for (int q = 0; q < n; ++q) {
    if (q != r) {
      recv_chunk(acc, q, q == 0 ? nullptr : &step_op, name);  // acc = x0, then acc += xq
    } else if (q == 0) {
      if (acc.data_ptr() != mine.data_ptr()) Tensor(acc).copy_async_(mine, current_stream());
    } else {
      reduce_into(acc, mine, step_op);
    }
  }
  for (const auto& send : sends) complete_send(*send);
}

void RingCommunicator::pairwise_reduce_scatter(const Tensor& flat, const Tensor& acc, ReduceOp op,
                                               const std::string& name) {
  const int n = world_size(), r = rank();
  const ReduceOp step_op = op == ReduceOp::Avg ? ReduceOp::Sum : op;
  const Tensor mine = chunk(flat, r);
  if (acc.data_ptr() != mine.data_ptr()) Tensor(acc).copy_async_(mine, current_stream());
  // Step s: my chunk for owner r+s goes to it while rank r-s's contribution to my chunk
  // arrives and is added: one chunk in flight per rank and step, sums in arrival order.
  for (int s = 1; s < n; ++s)
    exchange(chunk(flat, r + s), mod(r + s, n), acc, mod(r - s, n), &step_op, name);
}

void RingCommunicator::do_all_reduce(const Tensor& tensor, ReduceOp op) {
  gtl::grading::reference_guard("gtl::dist::RingCommunicator::do_all_reduce");
  const Tensor flat = tensor.flatten();
  if (deterministic()) {
    // Rank r owns chunk r. Rank 0 accumulates in place (acc = x0 is its own chunk); the others
    // need their own chunk until its turn comes, so they accumulate in one chunk of scratch.
    const Tensor mine = chunk(flat, rank());
    const Tensor acc =
        rank() == 0 ? mine : Tensor::empty({mine.numel()}, mine.dtype(), mine.device());
    ordered_reduce_scatter(flat, acc, op, "all_reduce");
    if (op == ReduceOp::Avg) divide_(acc, world_size());
    if (rank() != 0) Tensor(mine).copy_async_(acc, current_stream());
    ring_all_gather(flat, -1, "all_reduce");  // shift -1: rank r starts from chunk r
    return;
  }
  ring_reduce_scatter(flat, op, 0, "all_reduce");
  // Rank r now owns the finished chunk r+1: divide it once, then share it.
  if (op == ReduceOp::Avg) divide_(chunk(flat, rank() + 1), world_size());
  ring_all_gather(flat, 0, "all_reduce");
}

void RingCommunicator::do_reduce_scatter(const Tensor& input, const Tensor& output, ReduceOp op) {
  gtl::grading::reference_guard("gtl::dist::RingCommunicator::do_reduce_scatter");
  // `output` is the accumulator: no copy of the input. Only when output is the input's chunk r
  // itself (in place) and x0 must come first does the ordered exchange need a scratch chunk.
  const Tensor flat = input.flatten(), out = output.flatten();
  const bool aliased = out.data_ptr() == chunk(flat, rank()).data_ptr() && rank() != 0;
  if (deterministic()) {
    const Tensor acc = aliased ? Tensor::empty({out.numel()}, out.dtype(), out.device()) : out;
    ordered_reduce_scatter(flat, acc, op, "reduce_scatter");
    if (aliased) Tensor(out).copy_async_(acc, current_stream());
  } else {
    pairwise_reduce_scatter(flat, out, op, "reduce_scatter");
  }
  if (op == ReduceOp::Avg) divide_(out, world_size());
}

void RingCommunicator::do_all_gather(const Tensor& input, const Tensor& output) {
  gtl::grading::reference_guard("gtl::dist::RingCommunicator::do_all_gather");
  const Tensor flat = output.flatten();
  const Tensor mine = chunk(flat, rank());
  if (mine.data_ptr() != input.data_ptr())
    Tensor(mine).copy_async_(input.flatten(), current_stream());
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
