// In-process backend: ranks are threads; the ring's messages are tensors handed over through
// per-pair mailboxes in shared memory.
//
// Rendezvous mode (the default, as NCCL and large MPI messages behave): a send posts a message
// that refers to the sender's own tensor and completes only when the receiver has copied or
// reduced straight out of it. No transient message buffer exists, and "everybody sends, then
// everybody receives" deadlocks here exactly as on NCCL; exchange() (send_recv) posts the send
// before receiving and so does not. Buffered mode (RunOptions::rendezvous = false): a send
// copies the chunk into a fresh buffer from the *sender's* allocator, appends it to the
// mailbox (src -> dst) and returns; the receiver frees it after use. Either way every byte the
// counters report was really copied from one rank to another.
//
// CUDA tensors (ranks sharing one GPU): an event recorded on the sender's stream marks the data
// as ready; the receiver's stream waits on it before copying or reducing. In rendezvous mode the
// receiver records a second event after its copy, and the sender's stream waits on that before
// the sender may overwrite its tensor. No host synchronisation is needed.
//
// Failure handling: all mailboxes of a run share one lock and one condition variable. A rank
// that fails sets the abort reason and wakes everybody; a waiting rank also gives up when its
// peer has returned, or after the timeout. While it waits, a rank is listed in the run's table
// of blocked ranks (what it waits for, and since when), so a timeout reports the whole picture:
// "deadlock or hang: no progress for 2.0 s: rank 0 blocked in send to rank 1 (2.0 s), rank 1
// blocked in send to rank 0 (2.0 s)".
#include "gtl/distributed/in_process.h"

#include <algorithm>
#include <condition_variable>
#include <deque>
#include <exception>
#include <iomanip>
#include <list>
#include <map>
#include <mutex>
#include <optional>
#include <sstream>
#include <thread>

#include "gtl/distributed/ring.h"

// Like GTL_CHECK, but throws DistError: a communication failure.
#define GTL_DIST_CHECK(cond, msg)           \
  do {                                      \
    if (!(cond)) {                          \
      std::ostringstream gtl_dist_msg_;     \
      gtl_dist_msg_ << msg;                 \
      throw DistError(gtl_dist_msg_.str()); \
    }                                       \
  } while (0)

namespace gtl::dist {

namespace {

using Clock = std::chrono::steady_clock;

std::string seconds(double s) {
  std::ostringstream out;
  out << std::fixed << std::setprecision(1) << s << " s";
  return out.str();
}

double seconds_between(Clock::time_point a, Clock::time_point b) {
  return std::chrono::duration<double>(b - a).count();
}

struct Blocked {  // one waiting thread of a rank (its own thread or a progress thread)
  int world_rank = 0;
  std::string what;  // "send to rank 1", "all_reduce (recv from rank 2)"
  Clock::time_point since;
  double gave_up_after = -1;  // seconds, once this wait has timed out
};

struct Shared {  // one per run_ranks: everything a waiting rank may be woken by
  std::mutex mutex;
  std::condition_variable cv;
  std::string abort_reason;  // non-empty once a rank has failed
  std::vector<bool> exited;  // by world rank: returned from its function
  bool rendezvous = true;    // sends complete when the receiver has taken the data
  // Who waits for what. A wait that timed out stays listed until the run progresses again, so
  // that ranks timing out one after the other all report every blocked rank.
  std::list<Blocked> blocked;
  Clock::time_point last_progress = Clock::now();

  void progress() {  // under mutex: a message was posted or taken
    last_progress = Clock::now();
    blocked.remove_if([](const Blocked& b) { return b.gave_up_after >= 0; });
  }

  // "deadlock or hang: no progress for 2.0 s: rank 0 blocked in send to rank 1 (2.0 s), ..."
  std::string report() const {
    const Clock::time_point now = Clock::now();
    std::vector<const Blocked*> sorted;
    for (const Blocked& b : blocked) sorted.push_back(&b);
    std::stable_sort(sorted.begin(), sorted.end(), [](const Blocked* a, const Blocked* b) {
      return a->world_rank < b->world_rank;
    });
    std::ostringstream msg;
    msg << "deadlock or hang: no progress for " << seconds(seconds_between(last_progress, now))
        << ":";
    const char* sep = " ";
    for (const Blocked* b : sorted) {
      const double waited =
          b->gave_up_after >= 0 ? b->gave_up_after : seconds_between(b->since, now);
      msg << sep << "rank " << b->world_rank << " blocked in " << b->what << " (" << seconds(waited)
          << ")";
      sep = ", ";
    }
    msg << "; a rank not listed is in no communication call: did it fail, hang, or skip this "
           "call?";
    return msg.str();
  }
};

// Rendezvous: how the receiver tells the sender that it is done with the sender's tensor.
struct Handoff {
  bool taken = false;  // under Shared::mutex
  std::string error;   // the receiver rejected the message (shape, dtype, other collective)
  std::shared_ptr<Event> done;  // CUDA: the receiver's copy is done when this completes
};

struct Message {
  std::string op;
  Tensor data;                       // rendezvous: the sender's tensor; buffered: a copy
  std::shared_ptr<Event> ready;      // CUDA: the data is ready when this completes
  std::shared_ptr<Handoff> handoff;  // rendezvous only
};

bool is_point_to_point(const std::string& op) {
  return op == "send" || op == "recv" || op == "send_recv";
}

// "send to rank 1", "recv from rank 0", "all_reduce (recv from rank 2)" (world ranks).
std::string describe(const std::string& op, bool sending, int peer_world) {
  const std::string dir = sending ? "send to" : "recv from";
  const std::string peer = " rank " + std::to_string(peer_world);
  if ((op == "send" && sending) || (op == "recv" && !sending))
    return op + (sending ? " to" : " from") + peer;
  return op + " (" + dir + peer + ")";
}

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

struct InProcessSend : RingCommunicator::PostedSend {
  std::shared_ptr<Handoff> handoff;  // null: buffered, complete when posted
  int peer = 0;
  std::string op;
};

class InProcessCommunicator : public RingCommunicator {
 public:
  InProcessCommunicator(std::shared_ptr<Group> group, int rank)
      : RingCommunicator(rank, group->size()), group_(std::move(group)) {
    set_group_world_ranks(group_->world_ranks);
  }
  ~InProcessCommunicator() override { stop_progress_thread(); }
  std::string backend() const override { return "in-process"; }

 protected:
  bool has_progress_thread() const override { return true; }

  std::shared_ptr<PostedSend> post_send(const Tensor& chunk, int peer,
                                        const std::string& op) override {
    Shared& s = *group_->shared;
    note_peer(peer);
    auto posted = std::make_shared<InProcessSend>();
    posted->peer = peer;
    posted->op = op;
    Message m{op, chunk, nullptr, nullptr};
    if (s.rendezvous) {
      m.handoff = posted->handoff = std::make_shared<Handoff>();
    } else {
      m.data = Tensor::empty(chunk.shape(), chunk.dtype(), chunk.device());  // sender's memory
      m.data.copy_async_(chunk, current_stream());
    }
    if (chunk.is_cuda()) {
      m.ready = std::make_shared<Event>();
      m.ready->record(current_stream());
    }
    count_bytes(op, static_cast<int64_t>(chunk.nbytes()), 0);
    {
      std::lock_guard<std::mutex> lock(s.mutex);
      group_->mailbox[rank() * world_size() + peer].push_back(std::move(m));
      s.progress();
    }
    s.cv.notify_all();
    return posted;
  }

  void complete_send(PostedSend& posted) override {
    auto& send = static_cast<InProcessSend&>(posted);
    if (!send.handoff) return;  // buffered: done when posted
    Handoff& h = *send.handoff;
    {
      std::unique_lock<std::mutex> lock(group_->shared->mutex);
      wait_for(lock, send.peer, send.op, describe(send.op, true, peer_world(send.peer)),
               [&] { return h.taken; });
    }
    GTL_DIST_CHECK(h.error.empty(),
                   who() << ": " << send.op << " to rank " << send.peer << ": " << h.error);
    if (h.done) current_stream().wait(*h.done);
  }

  bool send_completed(PostedSend& posted) override {
    auto& send = static_cast<InProcessSend&>(posted);
    if (!send.handoff) return true;
    std::lock_guard<std::mutex> lock(group_->shared->mutex);
    return send.handoff->taken;
  }

  void recv_chunk(const Tensor& dst, int peer, const ReduceOp* reduce,
                  const std::string& op) override {
    note_peer(peer);
    Message m = take(peer, op);
    std::exception_ptr failure;
    std::string error;
    try {
      consume(m, dst, peer, reduce, op);
    } catch (const std::exception& e) {
      failure = std::current_exception();
      error = e.what();
    }
    release(m, error);
    if (failure) std::rethrow_exception(failure);
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
    comm->set_world_rank(world_rank());  // the trace and determinism: Communicator::split
    comm->set_timeout(timeout());
    return comm;
  }

 private:
  int peer_world(int peer) const { return group_->world_ranks[peer]; }

  // Rejects a message from another collective, or of another size, shape or dtype.
  void check_message(const Message& m, const Tensor& dst, int peer, const std::string& op) const {
    const bool p2p = is_point_to_point(op);
    GTL_DIST_CHECK(p2p ? is_point_to_point(m.op) : m.op == op,
                   who() << ": in " << op << ", but rank " << peer << " sent data for " << m.op
                         << ": every rank must call the same collectives in the same order");
    if (p2p) {
      GTL_DIST_CHECK(m.data.shape() == dst.shape() && m.data.dtype() == dst.dtype(),
                     who() << ": " << op << " from rank " << peer << ": expected "
                           << dtype_name(dst.dtype()) << " " << shape_str(dst.shape()) << ", got "
                           << dtype_name(m.data.dtype()) << " " << shape_str(m.data.shape()));
    } else {
      GTL_DIST_CHECK(m.data.numel() == dst.numel() && m.data.dtype() == dst.dtype(),
                     who() << ": " << op << ": expected " << dst.numel() << " "
                           << dtype_name(dst.dtype()) << " elements from rank " << peer << ", got "
                           << m.data.numel() << " " << dtype_name(m.data.dtype()));
    }
    check_same_device(op.c_str(), {&dst, &m.data});
  }

  // Copies or reduces the message into dst.
  void consume(const Message& m, const Tensor& dst, int peer, const ReduceOp* reduce,
               const std::string& op) {
    check_message(m, dst, peer, op);
    count_bytes(op, 0, static_cast<int64_t>(m.data.nbytes()));
    const Tensor src = m.data.reshape(dst.shape());
    if (m.ready) current_stream().wait(*m.ready);
    if (reduce) {
      reduce_into(dst, src, *reduce);
    } else {
      Tensor(dst).copy_async_(src, current_stream());
    }
    if (dst.is_cuda() && m.handoff) {
      m.handoff->done = std::make_shared<Event>();  // the sender's stream waits for our copy
      m.handoff->done->record(current_stream());
    } else if (dst.is_cuda() && src.storage()) {
      // The buffer came from the sender's allocator and is now read on our stream.
      src.storage()->allocator().record_stream(src.storage()->data(), current_stream());
    }
  }

  // Rendezvous: tells the sender we are done with its tensor (or why we rejected it). Our
  // reference to that tensor goes first: once its send completes the sender must hold the only
  // ones, or its memory would be freed whenever this thread got round to it, and the sender's
  // peak would depend on thread timing.
  void release(Message& m, const std::string& error) {
    if (!m.handoff) return;
    m.data = Tensor();
    m.ready.reset();
    Shared& s = *group_->shared;
    {
      std::lock_guard<std::mutex> lock(s.mutex);
      m.handoff->error = error.empty() ? ""
                                       : "rank " + std::to_string(world_rank()) +
                                             " rejected the message: " + error;
      m.handoff->taken = true;
      s.progress();
    }
    s.cv.notify_all();
  }

  // Waits for the next message from `peer`.
  Message take(int peer, const std::string& op) {
    Shared& s = *group_->shared;
    std::deque<Message>& box = group_->mailbox[peer * world_size() + rank()];
    std::unique_lock<std::mutex> lock(s.mutex);
    wait_for(lock, peer, op, describe(op, false, peer_world(peer)), [&] { return !box.empty(); });
    Message m = std::move(box.front());
    box.pop_front();
    s.progress();
    return m;
  }

  // Waits (holding `lock` on the shared mutex) until ready(), listed in the table of blocked
  // ranks meanwhile. Fails when a rank has failed, when `peer` returned without taking part,
  // or after timeout(), with a message naming who waits for whom.
  template <typename Ready>
  void wait_for(std::unique_lock<std::mutex>& lock, int peer, const std::string& op,
                const std::string& what, Ready ready) {
    Shared& s = *group_->shared;
    const int peer_w = peer_world(peer);
    auto entry = s.blocked.insert(s.blocked.end(), Blocked{world_rank(), what, Clock::now()});
    const bool woke = s.cv.wait_for(
        lock, timeout(), [&] { return ready() || !s.abort_reason.empty() || s.exited[peer_w]; });
    if (ready()) {  // first: a peer that failed after serving us did serve us
      s.blocked.erase(entry);
      return;
    }
    if (!s.abort_reason.empty()) {
      s.blocked.erase(entry);
      throw DistError(who() + ": " + op + " aborted: " + s.abort_reason);
    }
    std::ostringstream msg;
    msg << who() << ": " << op;
    if (woke) {
      s.blocked.erase(entry);
      msg << " cannot finish: rank " << peer << " (world rank " << peer_w
          << ") returned without taking part (every rank must call the same collectives)";
    } else {
      entry->gave_up_after = timeout().count() / 1000.0;
      msg << " timed out after " << timeout().count() / 1000.0 << " s waiting for rank " << peer
          << " (world rank " << peer_w << "): " << s.report();
    }
    throw DistError(msg.str());
  }

  std::shared_ptr<Group> group_;
  int64_t splits_ = 0;  // split() calls so far: the same sequence on every rank
};

std::vector<std::unique_ptr<InProcessCommunicator>> make_world(int n, const RunOptions& options,
                                                               std::shared_ptr<Shared> shared) {
  GTL_CHECK(n >= 1, "in-process world: expected at least 1 rank, got " << n);
  shared->exited.assign(n, false);
  shared->rendezvous = options.rendezvous;
  std::vector<int> world_ranks(n);
  for (int r = 0; r < n; ++r) world_ranks[r] = r;
  auto group = make_group(shared, world_ranks);
  std::vector<std::unique_ptr<InProcessCommunicator>> comms;
  for (int r = 0; r < n; ++r) {
    comms.push_back(std::make_unique<InProcessCommunicator>(group, r));
    comms.back()->set_timeout(options.timeout);
    comms.back()->set_deterministic(options.deterministic);
  }
  return comms;
}

// Rank r's CPU allocator: the caller's, or a fresh one; with the run's memory limit.
std::shared_ptr<Allocator> rank_allocator(const RunOptions& options, int r) {
  std::shared_ptr<Allocator> a =
      options.allocators.empty() ? make_cpu_allocator() : options.allocators[r];
  if (options.memory_limit > 0) a->set_memory_limit(options.memory_limit);
  return a;
}

}  // namespace

std::vector<std::unique_ptr<Communicator>> make_in_process_world(int world_size,
                                                                 const RunOptions& options) {
  std::vector<std::unique_ptr<Communicator>> out;
  for (auto& c : make_world(world_size, options, std::make_shared<Shared>()))
    out.push_back(std::move(c));
  return out;
}

void run_ranks(int world_size, const std::function<void(Communicator&)>& fn,
               const RunOptions& options) {
  GTL_CHECK(options.allocators.empty() || static_cast<int>(options.allocators.size()) == world_size,
            "run_ranks: RunOptions::allocators must hold one allocator per rank ("
                << world_size << "), got " << options.allocators.size());
  for (const auto& a : options.allocators)
    GTL_CHECK(a && a->device().is_cpu(),
              "run_ranks: RunOptions::allocators must be CPU allocators");
  auto shared = std::make_shared<Shared>();
  auto comms = make_world(world_size, options, shared);
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
        AllocatorScope cpu_memory(rank_allocator(options, r));
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
        comms[r]->synchronize();  // its async operations still take part until they are done
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
