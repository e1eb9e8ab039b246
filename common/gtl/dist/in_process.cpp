// In-process backend: ranks are threads; the ring's messages are tensors handed over through
// per-pair mailboxes in shared memory.
//
// A send copies the chunk into a fresh buffer from the *sender's* allocator and appends it to
// the mailbox (src -> dst); the receiver waits for it, then copies or reduces it into its own
// tensor. So every byte the counters report was really copied from one rank to another, and a
// rank cannot read a peer's tensor behind the algorithm's back.
//
// CUDA tensors (ranks sharing one GPU): the copy runs on the sender's stream and an event marks
// it; the receiver's stream waits on that event before its reduction kernel, so no host
// synchronisation is needed and each rank's work stays ordered on its own stream.
//
// Failure handling: all mailboxes of a run share one lock and one condition variable. A rank
// that fails sets the abort reason and wakes everybody; a receiver also gives up when its peer
// has returned, or after the timeout.
#include "gtl/dist/in_process.h"

#include <condition_variable>
#include <deque>
#include <map>
#include <mutex>
#include <optional>
#include <sstream>
#include <thread>

#include "gtl/dist/ring.h"

namespace gtl::dist {

namespace {

struct Shared {  // one per run_ranks: everything a waiting rank may be woken by
  std::mutex mutex;
  std::condition_variable cv;
  std::string abort_reason;  // non-empty once a rank has failed
  std::vector<bool> exited;  // by world rank: returned from its function
};

struct Message {
  std::string op;
  Tensor data;
  std::shared_ptr<Event> ready;  // CUDA: the sender's copy is done when this completes
};

struct Group;
struct PendingSplit {
  std::shared_ptr<Group> group;
  int unclaimed = 0;
};

struct Group {  // the ranks of one communicator (the world or a split of it)
  std::shared_ptr<Shared> shared;
  std::vector<int> world_ranks;                            // group rank -> world rank
  std::vector<std::deque<Message>> mailbox;                // [src * size + dst]
  std::map<std::pair<int64_t, int>, PendingSplit> splits;  // (split number, color)
  int size() const { return static_cast<int>(world_ranks.size()); }
};

std::shared_ptr<Group> make_group(std::shared_ptr<Shared> shared, std::vector<int> world_ranks) {
  auto g = std::make_shared<Group>();
  g->shared = std::move(shared);
  g->world_ranks = std::move(world_ranks);
  g->mailbox.resize(g->world_ranks.size() * g->world_ranks.size());
  return g;
}

class InProcessCommunicator : public RingCommunicator {
 public:
  InProcessCommunicator(std::shared_ptr<Group> group, int rank)
      : RingCommunicator(rank, group->size()), group_(std::move(group)) {}
  std::string backend() const override { return "in-process"; }

 protected:
  void send_chunk(const Tensor& chunk, int peer, const std::string& op) override {
    Message m{op, Tensor::empty(chunk.shape(), chunk.dtype(), chunk.device()), nullptr};
    m.data.copy_async_(chunk, current_stream());
    if (chunk.is_cuda()) {
      m.ready = std::make_shared<Event>();
      m.ready->record(current_stream());
    }
    count_bytes(op, static_cast<int64_t>(chunk.nbytes()), 0);
    Shared& s = *group_->shared;
    {
      std::lock_guard<std::mutex> lock(s.mutex);
      group_->mailbox[rank() * world_size() + peer].push_back(std::move(m));
    }
    s.cv.notify_all();
  }

  void recv_chunk(const Tensor& dst, int peer, const ReduceOp* reduce,
                  const std::string& op) override {
    Message m = take(peer, op);
    const std::string expected = op == "recv" ? "send" : op;  // a recv matches a send
    GTL_CHECK(m.op == expected, who()
                                    << ": in " << op << ", but rank " << peer << " sent data for "
                                    << m.op << ": every rank must call the same collectives in the "
                                    << "same order");
    GTL_CHECK(m.data.numel() == dst.numel() && m.data.dtype() == dst.dtype(),
              who() << ": " << op << ": expected " << dst.numel() << " " << dtype_name(dst.dtype())
                    << " elements from rank " << peer << ", got " << m.data.numel() << " "
                    << dtype_name(m.data.dtype()));
    check_same_device(op.c_str(), {&dst, &m.data});
    count_bytes(op, 0, static_cast<int64_t>(m.data.nbytes()));
    const Tensor src = m.data.reshape(dst.shape());
    if (m.ready) current_stream().wait(*m.ready);
    if (reduce) {
      reduce_into(dst, src, *reduce);
    } else {
      Tensor(dst).copy_async_(src, current_stream());
    }
    // The buffer came from the sender's allocator and is now read on our stream.
    if (dst.is_cuda() && src.storage())
      src.storage()->allocator().record_stream(src.storage()->data(), current_stream());
  }

  // MPI_Comm_split in miniature: all-gather (color, key), then the first member of each new
  // group to get here creates its mailboxes; the others pick them up.
  std::unique_ptr<Communicator> do_split(int color, int key) override {
    const int n = world_size();
    Tensor all = Tensor::empty({2 * int64_t(n)}, DType::Int64, Device::cpu());
    all.data<int64_t>()[2 * rank()] = color;
    all.data<int64_t>()[2 * rank() + 1] = key;
    ring_all_gather(all, -1, "split");
    const int64_t split_number = splits_++;
    if (color < 0) return nullptr;
    std::vector<std::pair<int64_t, int>> members;  // (key, rank) of my color
    for (int r = 0; r < n; ++r) {
      if (all.data<int64_t>()[2 * r] == color)
        members.push_back({all.data<int64_t>()[2 * r + 1], r});
    }
    std::sort(members.begin(), members.end());
    int my_index = 0;
    std::vector<int> world_ranks;
    for (const auto& [k, r] : members) {
      if (r == rank()) my_index = static_cast<int>(world_ranks.size());
      world_ranks.push_back(group_->world_ranks[r]);
    }
    std::shared_ptr<Group> sub;
    {
      std::lock_guard<std::mutex> lock(group_->shared->mutex);
      PendingSplit& p = group_->splits[{split_number, color}];
      if (!p.group) {
        p.group = make_group(group_->shared, world_ranks);
        p.unclaimed = static_cast<int>(world_ranks.size());
      }
      sub = p.group;
      if (--p.unclaimed == 0) group_->splits.erase({split_number, color});
    }
    auto comm = std::make_unique<InProcessCommunicator>(sub, my_index);
    comm->set_world_rank(world_rank());
    comm->set_timeout(timeout());
    return comm;
  }

 private:
  // Waits for the next message from `peer`, or fails with a message naming who waits for whom.
  Message take(int peer, const std::string& op) {
    Shared& s = *group_->shared;
    std::deque<Message>& box = group_->mailbox[peer * world_size() + rank()];
    const int peer_world = group_->world_ranks[peer];
    std::unique_lock<std::mutex> lock(s.mutex);
    const bool woke = s.cv.wait_for(lock, timeout(), [&] {
      return !box.empty() || !s.abort_reason.empty() || s.exited[peer_world];
    });
    if (!s.abort_reason.empty()) throw DistError(who() + ": " + op + " aborted: " + s.abort_reason);
    if (!box.empty()) {
      Message m = std::move(box.front());
      box.pop_front();
      return m;
    }
    std::ostringstream msg;
    msg << who() << ": " << op;
    if (woke) {
      msg << " cannot finish: rank " << peer << " (world rank " << peer_world
          << ") returned without taking part (every rank must call the same collectives)";
    } else {
      msg << " timed out after " << timeout().count() / 1000.0 << " s waiting for rank " << peer
          << " (world rank " << peer_world << "): did it fail, hang, or skip this call?";
    }
    throw DistError(msg.str());
  }

  std::shared_ptr<Group> group_;
  int64_t splits_ = 0;  // split() calls so far: the same sequence on every rank
};

std::vector<std::unique_ptr<InProcessCommunicator>> make_world(int n,
                                                               std::shared_ptr<Shared> shared) {
  GTL_CHECK(n >= 1, "in-process world: expected at least 1 rank, got " << n);
  shared->exited.assign(n, false);
  std::vector<int> world_ranks(n);
  for (int r = 0; r < n; ++r) world_ranks[r] = r;
  auto group = make_group(shared, world_ranks);
  std::vector<std::unique_ptr<InProcessCommunicator>> comms;
  for (int r = 0; r < n; ++r) comms.push_back(std::make_unique<InProcessCommunicator>(group, r));
  return comms;
}

}  // namespace

std::vector<std::unique_ptr<Communicator>> make_in_process_world(int world_size) {
  std::vector<std::unique_ptr<Communicator>> out;
  for (auto& c : make_world(world_size, std::make_shared<Shared>())) out.push_back(std::move(c));
  return out;
}

void run_ranks(int world_size, const std::function<void(Communicator&)>& fn,
               const RunOptions& options) {
  auto shared = std::make_shared<Shared>();
  auto comms = make_world(world_size, shared);
  for (auto& c : comms) c->set_timeout(options.timeout);

  std::mutex failure_mutex;
  int failed_rank = -1;
  std::string failure;
  auto fail = [&](int r, const std::string& what) {
    {
      std::lock_guard<std::mutex> lock(failure_mutex);
      if (failed_rank < 0) {
        failed_rank = r;
        failure = what;
      }
    }
    std::lock_guard<std::mutex> lock(shared->mutex);
    if (shared->abort_reason.empty())
      shared->abort_reason = "rank " + std::to_string(r) + " failed: " + what;
  };

  if (options.device.is_cuda()) {
    // The rank streams are non-blocking: they do not wait for the default stream, so without
    // this a rank could read inputs the launching thread's kernels or copies are still writing.
    DeviceGuard guard(options.device);
    device_synchronize();
  }
  std::vector<std::thread> threads;
  for (int r = 0; r < world_size; ++r) {
    threads.emplace_back([&, r] {
      try {
        // Per-rank allocators and stream: the statistics of rank r are rank r's alone.
        AllocatorScope cpu_memory(make_cpu_allocator());
        std::optional<DeviceGuard> device;
        std::optional<StreamScope> stream;
        std::optional<AllocatorScope> gpu_memory;
        if (options.device.is_cuda()) {
          device.emplace(options.device);
          stream.emplace(Stream::create(options.device));
          try {
            gpu_memory.emplace(make_cuda_caching_allocator(options.device.index()));
          } catch (const Error&) {
            // No caching allocator in this build yet: the ranks share the process-wide one.
          }
        }
        fn(*comms[r]);
        if (options.device.is_cuda()) current_stream().synchronize();
      } catch (const std::exception& e) {
        fail(r, e.what());
      } catch (...) {
        fail(r, "an exception that is not a std::exception");
      }
      {
        std::lock_guard<std::mutex> lock(shared->mutex);
        shared->exited[r] = true;
      }
      shared->cv.notify_all();
    });
  }
  for (auto& t : threads) t.join();
  if (failed_rank >= 0) {
    throw DistError("run_ranks: rank " + std::to_string(failed_rank) + " of " +
                    std::to_string(world_size) + " failed: " + failure);
  }
}

}  // namespace gtl::dist
