// MPI backend: the ring algorithms of ring.h over non-blocking MPI point-to-point messages.
//
// Each ring step posts MPI_Isend to the right neighbour and MPI_Irecv from the left one, then
// polls both with MPI_Testall until they finish or the timeout passes, so a peer that died or
// skipped a collective gives an error that names it instead of a hang. Messages are raw bytes
// tagged with the collective's name; a reduction receives into a scratch buffer first.
// After a timeout the communicator is unusable (its requests are left pending): let the
// exception end the program; at exit MPI is then aborted rather than finalised, so mpirun ends
// the other ranks at once instead of waiting for the peer that hung.
//
// Asynchronous calls on CPU tensors: MPI is initialised with MPI_THREAD_SERIALIZED, so there is
// no progress thread. all_reduce_async and the other collectives finish before they return (the
// Work is complete); isend is a real MPI_Isend whose Work::wait() waits for it; irecv receives
// before it returns. Deterministic mode works as in-process (the same ring.cpp code).
#include "gtl/distributed/mpi_communicator.h"

#include <atomic>
#include <chrono>
#include <climits>
#include <cstdlib>
#include <map>
#include <sstream>
#include <thread>
#include <vector>

#include "gtl/distributed/ring.h"

#ifdef GTL_HAVE_MPI
#include <mpi.h>
#endif

namespace gtl::dist {

bool mpi_available() {
#ifdef GTL_HAVE_MPI
  return true;
#else
  return false;
#endif
}

bool launched_by_mpi() {
  return std::getenv("OMPI_COMM_WORLD_SIZE") || std::getenv("PMI_SIZE") || std::getenv("PMIX_RANK");
}

#ifdef GTL_HAVE_MPI

namespace {

void check_mpi(int rc, const std::string& what) {
  if (rc == MPI_SUCCESS) return;
  char text[MPI_MAX_ERROR_STRING];
  int len = 0;
  MPI_Error_string(rc, text, &len);
  throw DistError(what + ": " + std::string(text, len));
}

int tag_of(const std::string& op) {
  static const std::map<std::string, int> tags = {
      {"all_reduce", 1}, {"reduce_scatter", 2}, {"all_gather", 3}, {"broadcast", 4}, {"barrier", 5},
      {"send", 6},       {"recv", 6},           {"send_recv", 6},  {"split", 7}};
  auto it = tags.find(op);
  return it == tags.end() ? 99 : it->second;
}

int byte_count(const Tensor& t) {
  GTL_CHECK(t.nbytes() <= static_cast<std::size_t>(INT_MAX),
            "MPI backend: messages over 2 GiB are not supported, got " << t.nbytes() << " bytes");
  return static_cast<int>(t.nbytes());
}

// Set when a wait timed out: its requests are left pending, and MPI_Finalize would wait for the
// peer that never came, so the program could not end until mpirun's own limit.
std::atomic<bool> timed_out{false};

// At exit: MPI_Finalize, or after a timeout MPI_Abort, which ends this rank at once and makes
// mpirun end the others (the timeout's message has been thrown and printed by then).
void finalize_mpi() {
  int finalized = 0;
  MPI_Finalized(&finalized);
  if (finalized) return;
  if (timed_out) MPI_Abort(MPI_COMM_WORLD, 1);
  MPI_Finalize();
}

class MpiCommunicator : public RingCommunicator {
 public:
  MpiCommunicator(MPI_Comm comm, int rank, int size) : RingCommunicator(rank, size), comm_(comm) {}
  ~MpiCommunicator() override {
    int finalized = 0;
    MPI_Finalized(&finalized);
    if (!finalized) MPI_Comm_free(&comm_);
  }
  std::string backend() const override { return "mpi"; }

  static std::unique_ptr<MpiCommunicator> wrap(MPI_Comm comm) {
    MPI_Comm_set_errhandler(comm, MPI_ERRORS_RETURN);  // errors become exceptions, not aborts
    int rank = 0, size = 1;
    MPI_Comm_rank(comm, &rank);
    MPI_Comm_size(comm, &size);
    auto c = std::make_unique<MpiCommunicator>(comm, rank, size);
    // The trace names ranks by their MPI_COMM_WORLD rank.
    MPI_Group group, world_group;
    MPI_Comm_group(comm, &group);
    MPI_Comm_group(MPI_COMM_WORLD, &world_group);
    std::vector<int> ranks(size), world_ranks(size);
    for (int r = 0; r < size; ++r) ranks[r] = r;
    MPI_Group_translate_ranks(group, size, ranks.data(), world_group, world_ranks.data());
    MPI_Group_free(&group);
    MPI_Group_free(&world_group);
    c->set_group_world_ranks(world_ranks);
    return c;
  }

 protected:
  struct MpiSend : PostedSend {
    std::vector<MPI_Request> request{MPI_REQUEST_NULL};  // MPI_REQUEST_NULL once complete
    int peer = 0;
    std::string op;
  };

  std::shared_ptr<PostedSend> post_send(const Tensor& chunk, int peer,
                                        const std::string& op) override {
    check_cpu(chunk, op);
    note_peer(peer);
    auto send = std::make_shared<MpiSend>();
    send->peer = peer;
    send->op = op;
    check_mpi(MPI_Isend(chunk.data_ptr(), byte_count(chunk), MPI_BYTE, peer, tag_of(op), comm_,
                        &send->request[0]),
              who() + ": " + op + ": MPI_Isend");
    count_bytes(op, static_cast<int64_t>(chunk.nbytes()), 0);
    return send;
  }

  void complete_send(PostedSend& posted) override {
    auto& send = static_cast<MpiSend&>(posted);
    wait(send.request, send.peer, send.op);
  }

  bool send_completed(PostedSend& posted) override {
    auto& send = static_cast<MpiSend&>(posted);
    int done = 0;
    check_mpi(MPI_Test(&send.request[0], &done, MPI_STATUS_IGNORE), who() + ": MPI_Test");
    return done != 0;
  }

  void recv_chunk(const Tensor& dst, int peer, const ReduceOp* reduce,
                  const std::string& op) override {
    exchange(Tensor(), -1, dst, peer, reduce, op);
  }

  // Both halves of a ring step in flight at once: a blocking send here could deadlock the ring.
  void exchange(const Tensor& send, int send_peer, const Tensor& dst, int recv_peer,
                const ReduceOp* reduce, const std::string& op) override {
    check_cpu(dst, op);
    note_peer(recv_peer);
    if (send.defined()) note_peer(send_peer);
    const Tensor target = reduce ? Tensor::empty(dst.shape(), dst.dtype(), Device::cpu()) : dst;
    std::vector<MPI_Request> requests;
    requests.reserve(2);
    MPI_Status status;
    requests.emplace_back();
    check_mpi(MPI_Irecv(target.data_ptr(), byte_count(target), MPI_BYTE, recv_peer, tag_of(op),
                        comm_, &requests.back()),
              who() + ": " + op + ": MPI_Irecv");
    if (send.defined()) {
      check_cpu(send, op);
      requests.emplace_back();
      check_mpi(MPI_Isend(send.data_ptr(), byte_count(send), MPI_BYTE, send_peer, tag_of(op), comm_,
                          &requests.back()),
                who() + ": " + op + ": MPI_Isend");
    }
    wait(requests, recv_peer, op, &status);
    int received = 0;
    MPI_Get_count(&status, MPI_BYTE, &received);
    GTL_CHECK(received == byte_count(target),
              who() << ": " << op << ": expected " << target.nbytes() << " bytes from rank "
                    << recv_peer << ", got " << received
                    << " (do all ranks pass tensors of the same size?)");
    if (reduce) reduce_into(dst, target, *reduce);
    if (send.defined()) count_bytes(op, static_cast<int64_t>(send.nbytes()), 0);
    count_bytes(op, 0, static_cast<int64_t>(dst.nbytes()));
  }

  std::unique_ptr<Communicator> do_split(int color, int key) override {
    MPI_Comm sub = MPI_COMM_NULL;
    check_mpi(MPI_Comm_split(comm_, color < 0 ? MPI_UNDEFINED : color, key, &sub),
              who() + ": split: MPI_Comm_split");
    if (sub == MPI_COMM_NULL) return nullptr;
    auto comm = wrap(sub);
    comm->set_world_rank(world_rank());
    comm->set_timeout(timeout());
    return comm;
  }

 private:
  void check_cpu(const Tensor& t, const std::string& op) const {
    GTL_CHECK(!t.is_cuda(), who() << ": " << op << ": the MPI backend moves CPU tensors, got one "
                                  << "on " << t.device().str() << " (use the NCCL backend)");
  }

  // Polls the requests; the first one's status (the receive) goes to `status`.
  void wait(std::vector<MPI_Request>& requests, int peer, const std::string& op,
            MPI_Status* status = nullptr) {
    const auto deadline = std::chrono::steady_clock::now() + timeout();
    std::vector<MPI_Status> statuses(requests.size());
    for (;;) {
      int done = 0;
      check_mpi(
          MPI_Testall(static_cast<int>(requests.size()), requests.data(), &done, statuses.data()),
          who() + ": " + op + ": MPI_Testall");
      if (done) break;
      if (std::chrono::steady_clock::now() > deadline) {
        std::ostringstream msg;
        msg << who() << ": " << op << " timed out after " << timeout().count() / 1000.0
            << " s waiting for rank " << peer << ": did it fail, hang, or skip this call?";
        timed_out = true;
        throw DistError(msg.str());
      }
      std::this_thread::yield();  // oversubscribed nodes: let the peer run
    }
    if (status) *status = statuses[0];
  }

  MPI_Comm comm_;
};

}  // namespace

std::unique_ptr<Communicator> mpi_world() {
  int initialized = 0;
  MPI_Initialized(&initialized);
  if (!initialized) {
    int provided = 0;
    check_mpi(MPI_Init_thread(nullptr, nullptr, MPI_THREAD_SERIALIZED, &provided), "MPI_Init");
    std::atexit(finalize_mpi);
  }
  MPI_Comm comm = MPI_COMM_NULL;
  check_mpi(MPI_Comm_dup(MPI_COMM_WORLD, &comm), "mpi_world: MPI_Comm_dup");
  return MpiCommunicator::wrap(comm);
}

#else

std::unique_ptr<Communicator> mpi_world() {
  throw Error(
      "mpi_world: this build has no MPI backend (install libopenmpi-dev and reconfigure "
      "with -DGTL_WITH_MPI=ON)");
}

#endif

}  // namespace gtl::dist
