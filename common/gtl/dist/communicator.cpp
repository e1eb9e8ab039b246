// The parts of every communicator that do not depend on the backend: argument checks (so a
// wrong call fails with a message on the rank that made it, not as a hang on another one),
// the call counters, timeouts, and the stream logic of the asynchronous variants.
#include "gtl/dist/communicator.h"

#include <cstdlib>
#include <string>

namespace gtl::dist {

const char* reduce_op_name(ReduceOp op) {
  switch (op) {
    case ReduceOp::Sum:
      return "sum";
    case ReduceOp::Avg:
      return "avg";
    case ReduceOp::Max:
      return "max";
    case ReduceOp::Min:
      return "min";
  }
  return "?";
}

std::chrono::milliseconds default_timeout() {
  if (const char* s = std::getenv("GTL_DIST_TIMEOUT_S")) {
    const double seconds = std::atof(s);
    GTL_CHECK(seconds > 0,
              "GTL_DIST_TIMEOUT_S: expected a positive number of seconds, got '" << s << "'");
    return std::chrono::milliseconds(static_cast<int64_t>(seconds * 1000));
  }
  return std::chrono::seconds(60);
}

// ---- Work -------------------------------------------------------------------------------------

Work Work::on_stream(const Stream& stream) {
  Work work;
  work.event_ = std::make_shared<Event>();
  work.event_->record(stream);
  return work;
}

void Work::wait() const {
  if (!event_) return;
  current_stream().wait(*event_);
}

bool Work::completed() const {
  return !event_ || event_->query();
}

// ---- Communicator -----------------------------------------------------------------------------

Communicator::Communicator(int rank, int world_size)
    : rank_(rank), world_size_(world_size), timeout_(default_timeout()) {
  GTL_CHECK(world_size >= 1 && rank >= 0 && rank < world_size,
            "Communicator: rank " << rank << " outside a world of " << world_size);
}

std::string Communicator::who() const {
  std::string s =
      "rank " + std::to_string(rank_) + "/" + std::to_string(world_size_) + " (" + backend();
  if (world_rank_ >= 0) s += ", world rank " + std::to_string(world_rank_);
  return s + ")";
}

void Communicator::count_bytes(const std::string& op, int64_t sent, int64_t received) {
  OpCounters& c = counters_[op];
  c.bytes_sent += sent;
  c.bytes_received += received;
}

OpCounters Communicator::counters(const std::string& op) const {
  auto it = counters_.find(op);
  return it == counters_.end() ? OpCounters{} : it->second;
}

OpCounters Communicator::total_counters() const {
  OpCounters t;
  for (const auto& [op, c] : counters_) {
    t.calls += c.calls;
    t.bytes_sent += c.bytes_sent;
    t.bytes_received += c.bytes_received;
  }
  return t;
}

namespace {

void check_tensor(const std::string& who, const char* op, const Tensor& t) {
  GTL_CHECK(t.defined(), who << ": " << op << ": undefined tensor");
}

void check_reduce(const std::string& who, const char* op, const Tensor& t, ReduceOp r) {
  check_tensor(who, op, t);
  GTL_CHECK(r != ReduceOp::Avg || is_floating(t.dtype()),
            who << ": " << op << "(avg) needs a floating-point tensor, got "
                << dtype_name(t.dtype()) << " (integer averages would truncate; use sum)");
}

void check_pair(const std::string& who, const char* op, const Tensor& big, const Tensor& small,
                int n, const char* big_name) {
  check_tensor(who, op, big);
  check_tensor(who, op, small);
  check_same_device(op, {&big, &small});
  GTL_CHECK(big.dtype() == small.dtype(),
            who << ": " << op << ": input and output dtypes differ: " << dtype_name(big.dtype())
                << " and " << dtype_name(small.dtype()));
  GTL_CHECK(big.numel() == small.numel() * n,
            who << ": " << op << ": the " << big_name << " must hold world_size (" << n
                << ") chunks of " << small.numel() << " elements, got " << big.numel());
}

}  // namespace

void Communicator::all_reduce(const Tensor& tensor, ReduceOp op) {
  check_reduce(who(), "all_reduce", tensor, op);
  ++counters_["all_reduce"].calls;
  if (world_size_ == 1) {
    return;  // sum, avg, max and min of one value is that value
  }
  do_all_reduce(tensor, op);
}

void Communicator::reduce_scatter(const Tensor& input, const Tensor& output, ReduceOp op) {
  check_reduce(who(), "reduce_scatter", input, op);
  check_pair(who(), "reduce_scatter", input, output, world_size_, "input");
  ++counters_["reduce_scatter"].calls;
  if (world_size_ == 1) {
    output.flatten().copy_async_(input.flatten(), current_stream());
    return;
  }
  do_reduce_scatter(input, output, op);
}

void Communicator::all_gather(const Tensor& input, const Tensor& output) {
  check_pair(who(), "all_gather", output, input, world_size_, "output");
  ++counters_["all_gather"].calls;
  if (world_size_ == 1) {
    output.flatten().copy_async_(input.flatten(), current_stream());
    return;
  }
  do_all_gather(input, output);
}

void Communicator::broadcast(const Tensor& tensor, int root) {
  check_tensor(who(), "broadcast", tensor);
  GTL_CHECK(root >= 0 && root < world_size_,
            who() << ": broadcast: root " << root << " is not a rank of " << world_size_);
  ++counters_["broadcast"].calls;
  do_broadcast(tensor, root);
}

void Communicator::barrier() {
  ++counters_["barrier"].calls;
  do_barrier();
}

void Communicator::send(const Tensor& tensor, int dst) {
  check_tensor(who(), "send", tensor);
  GTL_CHECK(dst >= 0 && dst < world_size_ && dst != rank_,
            who() << ": send: destination " << dst << " must be another rank of " << world_size_);
  ++counters_["send"].calls;
  do_send(tensor, dst);
}

void Communicator::recv(const Tensor& tensor, int src) {
  check_tensor(who(), "recv", tensor);
  GTL_CHECK(src >= 0 && src < world_size_ && src != rank_,
            who() << ": recv: source " << src << " must be another rank of " << world_size_);
  ++counters_["recv"].calls;
  do_recv(tensor, src);
}

std::unique_ptr<Communicator> Communicator::split(int color, int key) {
  ++counters_["split"].calls;
  return do_split(color, key);
}

// CPU: run now, hand back a finished Work. CUDA: run on the communicator's stream after what
// the caller queued so far, and tell the allocator that the tensors are in use there.
template <typename F>
Work Communicator::run_async(const Tensor& a, const Tensor& b, F&& op) {
  if (!a.defined() || !a.is_cuda()) {
    op();
    return Work();
  }
#ifdef GTL_WITH_CUDA
  const Stream caller = current_stream();
  if (!has_comm_stream_) {
    comm_stream_ = Stream::create(a.device());
    has_comm_stream_ = true;
  }
  comm_stream_.wait(caller);
  for (const Tensor* t : {&a, &b}) {
    if (t->defined() && t->storage())
      t->storage()->allocator().record_stream(t->storage()->data(), comm_stream_);
  }
  {
    StreamScope scope(comm_stream_);
    op();
  }
  return Work::on_stream(comm_stream_);
#else
  throw Error(who() + ": asynchronous collective on " + a.device().str() + ": " +
              cuda_unavailable_reason());
#endif
}

Work Communicator::all_reduce_async(const Tensor& tensor, ReduceOp op) {
  return run_async(tensor, Tensor(), [&] { all_reduce(tensor, op); });
}

Work Communicator::reduce_scatter_async(const Tensor& input, const Tensor& output, ReduceOp op) {
  return run_async(input, output, [&] { reduce_scatter(input, output, op); });
}

Work Communicator::all_gather_async(const Tensor& input, const Tensor& output) {
  return run_async(input, output, [&] { all_gather(input, output); });
}

Work Communicator::broadcast_async(const Tensor& tensor, int root) {
  return run_async(tensor, Tensor(), [&] { broadcast(tensor, root); });
}

}  // namespace gtl::dist
