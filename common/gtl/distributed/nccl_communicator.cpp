// NCCL backend: each collective is one NCCL call enqueued on current_stream(); NCCL picks its
// own algorithm (ring or tree, over NVLink, PCIe or the network).
//
// Counters: NCCL does not report its traffic, so this backend counts what the ring algorithm
// of ring.h moves for the same call (2(N-1)/N of the buffer for an all-reduce, ...). These are
// the figures nccl-tests' "bus bandwidth" is built on, and equal the in-process backend's.
//
// Timeouts: NCCL calls return as soon as the work is queued, so a missing peer shows up as a
// stream that never finishes. Where this backend waits (barrier(), and the end of each rank's work
// in run_nccl_ranks) it polls the stream together with ncclCommGetAsyncError, and after timeout()
// aborts the communicator and throws DistError, as PyTorch's NCCL watchdog does. A rank that
// waits on its stream itself (Tensor::item(), say) is freed when a failing peer aborts it.
//
// Threads: NCCL allows one thread at a time per communicator, but an abort must come from the
// thread that saw the failure. Every NCCL call therefore holds the communicator's mutex and first
// checks whether it was aborted: an abort never frees a communicator under a running call, and
// no call reaches NCCL after an abort.
#include "gtl/distributed/nccl_communicator.h"

#include <atomic>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <mutex>
#include <string>
#include <thread>

#ifdef GTL_HAVE_NCCL
#include "gtl/runtime/cuda_check.h"
#endif
#ifdef GTL_HAVE_MPI
#include <mpi.h>
#endif

namespace gtl::dist {

bool nccl_available() {
#ifdef GTL_HAVE_NCCL
  return cuda_available();
#else
  return false;
#endif
}

#ifdef GTL_HAVE_NCCL

namespace {

ncclDataType_t nccl_type(DType t) {
  switch (t) {
    case DType::Float32:
      return ncclFloat32;
    case DType::Float16:
      return ncclFloat16;
    case DType::BFloat16:
      return ncclBfloat16;
    case DType::Int32:
      return ncclInt32;
    case DType::Int64:
      return ncclInt64;
    case DType::UInt8:
      return ncclUint8;
  }
  return ncclFloat32;
}

ncclRedOp_t nccl_op(ReduceOp op) {
  switch (op) {
    case ReduceOp::Sum:
      return ncclSum;
    case ReduceOp::Avg:
      return ncclAvg;
    case ReduceOp::Max:
      return ncclMax;
    case ReduceOp::Min:
      return ncclMin;
  }
  return ncclSum;
}

class NcclCommunicator : public Communicator {
 public:
  NcclCommunicator(ncclComm_t comm, int rank, int size, int device)
      : Communicator(rank, size), comm_(comm), device_(device) {}
  ~NcclCommunicator() override {
    std::lock_guard<std::mutex> lock(mutex_);
    if (!aborted_) ncclCommDestroy(comm_);
  }
  std::string backend() const override { return "nccl"; }
  // Ends every pending operation of this communicator with an error (from any thread).
  void abort() {
    std::lock_guard<std::mutex> lock(mutex_);
    abort_locked();
  }
  // Waits for the work queued on the current stream, at most timeout(): a peer that never joins
  // a collective, or an error NCCL reports asynchronously, ends in DistError instead of a hang.
  void wait(const char* what) {
    const auto deadline = std::chrono::steady_clock::now() + timeout();
    for (;;) {
      const cudaError_t e = cudaStreamQuery(stream());
      if (e == cudaSuccess) return;
      if (e != cudaErrorNotReady) GTL_CUDA_CHECK(e);
      (void)cudaGetLastError();  // "not ready" is an answer, not an error a later check should see
      {
        std::lock_guard<std::mutex> lock(mutex_);
        if (aborted_) throw DistError(who() + ": " + what + ": aborted (another rank failed)");
        ncclResult_t async = ncclSuccess;
        GTL_NCCL_CHECK(ncclCommGetAsyncError(comm_, &async));
        if (async != ncclSuccess) {
          abort_locked();
          throw DistError(who() + ": " + what + ": NCCL failed: " + ncclGetErrorString(async));
        }
        if (std::chrono::steady_clock::now() > deadline) {
          abort_locked();
          throw DistError(who() + ": " + what + ": its NCCL work did not finish in " +
                          std::to_string(timeout().count() / 1000.0) +
                          " s (did every rank call the same collectives in the same order?)");
        }
      }
      std::this_thread::sleep_for(std::chrono::microseconds(50));
    }
  }

 protected:
  void do_all_reduce(const Tensor& t, ReduceOp op) override {
    check(t, "all_reduce");
    const auto lock = lock_for("all_reduce");
    GTL_NCCL_CHECK(ncclAllReduce(t.data_ptr(), t.data_ptr(), t.numel(), nccl_type(t.dtype()),
                                 nccl_op(op), comm_, stream()));
    const int64_t ring = ring_bytes(t) * 2;  // reduce-scatter + all-gather
    count_bytes("all_reduce", ring, ring);
    note_ring_peers();
  }
  void do_reduce_scatter(const Tensor& in, const Tensor& out, ReduceOp op) override {
    check(in, "reduce_scatter");
    const auto lock = lock_for("reduce_scatter");
    GTL_NCCL_CHECK(ncclReduceScatter(in.data_ptr(), out.data_ptr(), out.numel(),
                                     nccl_type(in.dtype()), nccl_op(op), comm_, stream()));
    const int64_t b = static_cast<int64_t>(out.nbytes()) * (world_size() - 1);
    count_bytes("reduce_scatter", b, b);
    note_ring_peers();
  }
  void do_all_gather(const Tensor& in, const Tensor& out) override {
    check(in, "all_gather");
    const auto lock = lock_for("all_gather");
    GTL_NCCL_CHECK(ncclAllGather(in.data_ptr(), out.data_ptr(), in.numel(), nccl_type(in.dtype()),
                                 comm_, stream()));
    const int64_t b = static_cast<int64_t>(in.nbytes()) * (world_size() - 1);
    count_bytes("all_gather", b, b);
    note_ring_peers();
  }
  void do_broadcast(const Tensor& t, int root) override {
    check(t, "broadcast");
    const auto lock = lock_for("broadcast");
    GTL_NCCL_CHECK(ncclBroadcast(t.data_ptr(), t.data_ptr(), t.numel(), nccl_type(t.dtype()), root,
                                 comm_, stream()));
    const int pos = (rank() - root + world_size()) % world_size();  // place in the chain
    const auto b = static_cast<int64_t>(t.nbytes());
    count_bytes("broadcast", pos < world_size() - 1 ? b : 0, pos > 0 ? b : 0);
    if (pos > 0) note_peer((rank() + world_size() - 1) % world_size());
    if (pos < world_size() - 1) note_peer((rank() + 1) % world_size());
  }
  void do_barrier() override {
    // An all-reduce of one value, then the host waits for it: nobody passes before all arrived.
    DeviceGuard guard(Device::cuda(device_));
    Tensor token = Tensor::zeros({1}, DType::Float32, Device::cuda(device_));
    {
      const auto lock = lock_for("barrier");
      GTL_NCCL_CHECK(ncclAllReduce(token.data_ptr(), token.data_ptr(), 1, ncclFloat32, ncclSum,
                                   comm_, stream()));
    }
    wait("barrier");
    count_bytes("barrier", 0, 0);
  }
  void do_send(const Tensor& t, int dst) override {
    check(t, "send");
    const auto lock = lock_for("send");
    GTL_NCCL_CHECK(ncclSend(t.data_ptr(), t.numel(), nccl_type(t.dtype()), dst, comm_, stream()));
    count_bytes("send", static_cast<int64_t>(t.nbytes()), 0);
  }
  void do_recv(const Tensor& t, int src) override {
    check(t, "recv");
    const auto lock = lock_for("recv");
    GTL_NCCL_CHECK(ncclRecv(t.data_ptr(), t.numel(), nccl_type(t.dtype()), src, comm_, stream()));
    count_bytes("recv", 0, static_cast<int64_t>(t.nbytes()));
  }
  // One group: NCCL posts both halves together, so a ring of send_recv calls cannot deadlock.
  void do_send_recv(const Tensor& send, int dst, const Tensor& recv, int src) override {
    check(send, "send_recv");
    check(recv, "send_recv");
    const auto lock = lock_for("send_recv");
    GTL_NCCL_CHECK(ncclGroupStart());
    const ncclResult_t sent =
        ncclSend(send.data_ptr(), send.numel(), nccl_type(send.dtype()), dst, comm_, stream());
    const ncclResult_t received =
        ncclRecv(recv.data_ptr(), recv.numel(), nccl_type(recv.dtype()), src, comm_, stream());
    GTL_NCCL_CHECK(ncclGroupEnd());
    GTL_NCCL_CHECK(sent);
    GTL_NCCL_CHECK(received);
    count_bytes("send_recv", static_cast<int64_t>(send.nbytes()),
                static_cast<int64_t>(recv.nbytes()));
  }
  // NCCL picks ring or tree and its own chunking: the order of a sum is not ours to fix.
  bool supports_deterministic() const override { return false; }
  std::unique_ptr<Communicator> do_split(int color, int key) override {
    ncclComm_t sub = nullptr;
    {
      const auto lock = lock_for("split");
      GTL_NCCL_CHECK(
          ncclCommSplit(comm_, color < 0 ? NCCL_SPLIT_NOCOLOR : color, key, &sub, nullptr));
    }
    if (color < 0 || sub == nullptr) return nullptr;
    int rank = 0, size = 0;
    if (ncclCommUserRank(sub, &rank) != ncclSuccess || ncclCommCount(sub, &size) != ncclSuccess) {
      ncclCommDestroy(sub);  // not leaked when the query fails
      throw DistError(who() + ": split: cannot query the new communicator");
    }
    auto comm = std::make_unique<NcclCommunicator>(sub, rank, size, device_);
    comm->set_world_rank(world_rank());
    comm->set_timeout(timeout());
    comm->set_group_world_ranks(comm->gather_world_ranks(world_rank()));
    return comm;
  }

 private:
  cudaStream_t stream() const { return current_stream().handle(); }
  // The trace's peers of a ring collective: the two neighbours.
  void note_ring_peers() {
    note_peer((rank() + world_size() - 1) % world_size());
    note_peer((rank() + 1) % world_size());
  }
  // The world rank of every rank of this (split) communicator, for the trace: ncclCommSplit
  // does not say, so the ranks all-gather them (one int32 each, not counted).
  std::vector<int> gather_world_ranks(int my_world_rank) {
    DeviceGuard guard(Device::cuda(device_));
    Tensor mine = Tensor::from_vector(std::vector<float>{0.0f}, {1}, DType::Int32);
    mine.data<int32_t>()[0] = my_world_rank;
    Tensor in = mine.to(Device::cuda(device_));
    Tensor all = Tensor::empty({world_size()}, DType::Int32, Device::cuda(device_));
    {
      const auto lock = lock_for("split");
      GTL_NCCL_CHECK(ncclAllGather(in.data_ptr(), all.data_ptr(), 1, ncclInt32, comm_, stream()));
    }
    const Tensor host = all.to(Device::cpu());  // waits for the stream
    std::vector<int> ranks(world_size());
    for (int r = 0; r < world_size(); ++r) ranks[r] = host.data<int32_t>()[r];
    return ranks;
  }
  // Locks the communicator for one NCCL call, after checking that it was not aborted.
  std::unique_lock<std::mutex> lock_for(const char* op) {
    std::unique_lock<std::mutex> lock(mutex_);
    if (aborted_)
      throw DistError(who() + ": " + op + ": the communicator was aborted (another rank failed)");
    return lock;
  }
  void abort_locked() {
    if (!aborted_) ncclCommAbort(comm_);
    aborted_ = true;
  }
  void check(const Tensor& t, const char* op) const {
    GTL_CHECK(t.device() == Device::cuda(device_),
              who() << ": " << op << ": NCCL rank on cuda:" << device_ << " got a tensor on "
                    << t.device().str());
  }
  // One ring pass (reduce-scatter or all-gather): every chunk but one, chunks as in ring.cpp.
  int64_t ring_bytes(const Tensor& t) const {
    const int64_t n = world_size(), numel = t.numel();
    const int64_t skipped = (rank() + 1) % n;  // the chunk this rank does not send
    const int64_t chunk = (skipped + 1) * numel / n - skipped * numel / n;
    return (numel - chunk) * static_cast<int64_t>(t.element_size());
  }

  ncclComm_t comm_;
  int device_;
  std::mutex mutex_;      // held by every NCCL call on comm_, and by abort
  bool aborted_ = false;  // under mutex_
};

ncclUniqueId read_id(const std::string& path, std::chrono::milliseconds timeout) {
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  ncclUniqueId id;
  for (;;) {
    std::ifstream in(path, std::ios::binary);
    if (in && in.read(reinterpret_cast<char*>(&id), sizeof id)) return id;
    GTL_CHECK(std::chrono::steady_clock::now() < deadline,
              "nccl_from_file: no NCCL id in " << path << " after " << timeout.count() / 1000.0
                                               << " s: did rank 0 start, and is the path on a "
                                               << "filesystem all ranks share?");
    std::this_thread::sleep_for(std::chrono::milliseconds(20));  // a file cannot be waited on
  }
}

// One process per GPU: `device` becomes this process's current GPU from here on, as
// torch.cuda.set_device does. A guard scoped to the NCCL initialisation would switch back to
// GPU 0 after it, and everything that means "the current GPU" would then be GPU 0 in every
// rank: the default stream (and so current_stream() outside a StreamScope), device_synchronize(),
// kernels launched without a DeviceGuard.
void use_device_for_good(int device) {
  GTL_CHECK(device >= 0 && device < cuda_device_count(),
            "NCCL rank on cuda:" << device << ", but this process sees " << cuda_device_count()
                                 << " GPU(s) (check LOCAL_RANK and CUDA_VISIBLE_DEVICES)");
  GTL_CUDA_CHECK(cudaSetDevice(device));
}

}  // namespace

std::vector<std::unique_ptr<Communicator>> nccl_communicators(const std::vector<int>& devices) {
  std::vector<ncclComm_t> comms(devices.size());
  GTL_NCCL_CHECK(ncclCommInitAll(comms.data(), static_cast<int>(devices.size()), devices.data()));
  std::vector<std::unique_ptr<Communicator>> out;
  for (std::size_t i = 0; i < devices.size(); ++i) {
    out.push_back(std::make_unique<NcclCommunicator>(comms[i], static_cast<int>(i),
                                                     static_cast<int>(devices.size()), devices[i]));
  }
  return out;
}

std::unique_ptr<Communicator> nccl_from_mpi(int device) {
#ifdef GTL_HAVE_MPI
  int initialized = 0;
  MPI_Initialized(&initialized);
  GTL_CHECK(initialized, "nccl_from_mpi: initialise MPI first (mpi_world())");
  int rank = 0, size = 1;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  ncclUniqueId id;
  if (rank == 0) GTL_NCCL_CHECK(ncclGetUniqueId(&id));
  MPI_Bcast(&id, sizeof id, MPI_BYTE, 0, MPI_COMM_WORLD);
  use_device_for_good(device);
  ncclComm_t comm = nullptr;
  GTL_NCCL_CHECK(ncclCommInitRank(&comm, size, id, rank));
  return std::make_unique<NcclCommunicator>(comm, rank, size, device);
#else
  throw Error("nccl_from_mpi: this build has no MPI; use nccl_from_file");
#endif
}

std::unique_ptr<Communicator> nccl_from_file(int rank, int world_size, int device,
                                             const std::string& path,
                                             std::chrono::milliseconds timeout) {
  ncclUniqueId id;
  if (rank == 0) {
    GTL_NCCL_CHECK(ncclGetUniqueId(&id));
    // Write then rename: readers never see half an id.
    const std::string tmp = path + ".tmp";
    {
      std::ofstream out(tmp, std::ios::binary);
      GTL_CHECK(out.write(reinterpret_cast<const char*>(&id), sizeof id),
                "nccl_from_file: cannot write " << tmp);
    }
    std::filesystem::rename(tmp, path);
  } else {
    id = read_id(path, timeout);
  }
  use_device_for_good(device);
  ncclComm_t comm = nullptr;
  GTL_NCCL_CHECK(ncclCommInitRank(&comm, world_size, id, rank));
  return std::make_unique<NcclCommunicator>(comm, rank, world_size, device);
}

void run_nccl_ranks(int world_size, const std::function<void(Communicator&)>& fn) {
  std::vector<int> devices(world_size);
  for (int r = 0; r < world_size; ++r) devices[r] = r;
  auto comms = nccl_communicators(devices);
  // The rank streams are non-blocking: they do not wait for the default stream, so without this
  // a rank could read inputs the launching thread's kernels or copies are still writing.
  for (int device : devices) {
    DeviceGuard guard(Device::cuda(device));
    device_synchronize();
  }
  std::mutex mutex;
  int failed_rank = -1;
  std::string failure;
  std::vector<std::thread> threads;
  for (int r = 0; r < world_size; ++r) {
    threads.emplace_back([&, r] {
      try {
        DeviceGuard guard(Device::cuda(r));
        StreamScope stream(Stream::create(Device::cuda(r)));
        fn(*comms[r]);
        static_cast<NcclCommunicator&>(*comms[r]).wait("the end of the rank's work");
      } catch (const std::exception& e) {
        std::lock_guard<std::mutex> lock(mutex);
        if (failed_rank >= 0) return;
        failed_rank = r;
        failure = e.what();
        for (auto& c : comms) static_cast<NcclCommunicator&>(*c).abort();
      }
    });
  }
  for (auto& t : threads) t.join();
  if (failed_rank >= 0) {
    throw DistError("run_nccl_ranks: rank " + std::to_string(failed_rank) + " of " +
                    std::to_string(world_size) + " failed: " + failure);
  }
}

#else

namespace {
[[noreturn]] void no_nccl(const char* what) {
  throw Error(std::string(what) + ": this build has no NCCL backend (" +
              (cuda_available() ? std::string("NCCL not found at configure time")
                                : cuda_unavailable_reason()) +
              ")");
}
}  // namespace

std::vector<std::unique_ptr<Communicator>> nccl_communicators(const std::vector<int>&) {
  no_nccl("nccl_communicators");
}
std::unique_ptr<Communicator> nccl_from_mpi(int) {
  no_nccl("nccl_from_mpi");
}
std::unique_ptr<Communicator> nccl_from_file(int, int, int, const std::string&,
                                             std::chrono::milliseconds) {
  no_nccl("nccl_from_file");
}
void run_nccl_ranks(int, const std::function<void(Communicator&)>&) {
  no_nccl("run_nccl_ranks");
}

#endif

}  // namespace gtl::dist
