// lab05_ring_processes (provided, pristine): the student's ring on the launcher's processes (see
// ring_processes.h).
#include <iostream>
#include <sstream>

#include "data_parallel.h"
#include "gtl/distributed/launch.h"
#include "gtl_reference_guard.h"
#include "ring_processes.h"

namespace lab05 {
namespace {
std::vector<int64_t> parse_sizes(const std::string& list) {
  std::vector<int64_t> sizes;
  std::stringstream s(list);
  std::string item;
  while (std::getline(s, item, ',')) sizes.push_back(std::stoll(item));
  return sizes;
}
}  // namespace

int ring_processes_main(int argc, char** argv) {
  uint64_t seed = 1;
  std::vector<int64_t> sizes;
  std::string out;
  for (int i = 1; i + 1 < argc; i += 2) {
    const std::string flag = argv[i], value = argv[i + 1];
    if (flag == "--seed") seed = std::stoull(value);
    if (flag == "--sizes") sizes = parse_sizes(value);
    if (flag == "--out") out = value;
  }
  if (out.empty() || sizes.empty()) {
    std::cerr << "usage: lab05_ring_processes --seed S --sizes n1,n2,... --out PREFIX\n";
    return 2;
  }
  try {
    const std::unique_ptr<Communicator> comm = gtl::dist::init_from_environment();
    std::vector<RingRun> runs;
    for (const int64_t n : sizes) {
      const std::vector<float> input = ring_process_input(seed, comm->rank(), n);
      Tensor t = Tensor::from_vector(input, {n});
      comm->reset_counters();
      {
        // The core's collectives refuse to run inside the ring (one process per rank: the scope
        // is this rank's alone).
        const gtl::grading::StudentCall call(
            "ring_all_reduce (TODO 1, ring_all_reduce.cpp)",
            {"gtl::dist::Communicator::all_reduce", "gtl::dist::Communicator::reduce_scatter",
             "gtl::dist::Communicator::all_gather", "gtl::dist::RingCommunicator::do_"});
        ring_all_reduce(*comm, t);
      }
      const gtl::dist::OpCounters c = comm->total_counters();
      runs.push_back({n, c.bytes_sent, c.bytes_received, t.to_vector()});
    }
    write_ring_runs(out + "." + std::to_string(comm->rank()), comm->world_size(), runs);
    return 0;
  } catch (const std::exception& e) {
    std::cerr << "lab05_ring_processes: " << e.what() << "\n";
    return 1;
  }
}

}  // namespace lab05

int main(int argc, char** argv) {
  return lab05::ring_processes_main(argc, argv);
}
