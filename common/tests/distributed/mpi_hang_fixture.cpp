// A job that hangs, for launched_job_test: rank 0 all-reduces while rank 1 sleeps past the
// collective timeout (GTL_DIST_TIMEOUT_S), as a rank stuck in its own computation would.
#include <chrono>
#include <cstdio>
#include <thread>

#include "gtl/distributed/mpi_communicator.h"
#include "gtl/tensor/tensor.h"

int main() {
  auto comm = gtl::dist::mpi_world();
  if (comm->rank() == 1) {
    std::this_thread::sleep_for(std::chrono::seconds(30));
    return 0;
  }
  try {
    gtl::Tensor t = gtl::Tensor::ones({4});
    comm->all_reduce(t);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "%s\n", e.what());
    return 1;
  }
  return 0;
}
