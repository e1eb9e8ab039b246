// TODO 1's ring across real processes (provided, pristine): the inputs of lab05_ring_processes and
// the file each of its ranks writes, shared by the program, its test and the lab's judge.
//
// Why real processes: in-process ranks are threads of one address space, so a ring could find its
// neighbours' tensors through a global and never send them; the communicator's counters would
// see the expected calls and bytes all the same. Processes share no memory: under mpirun only
// what travels through the communicator arrives.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace lab05 {

// Rank `rank`'s input of `n` elements: integers in [-8, 8] drawn from (seed, rank, n), as floats,
// so that every order of summing them gives the same bits (no rounding below 2^24).
std::vector<float> ring_process_input(uint64_t seed, int rank, int64_t n);

// What a rank of lab05_ring_processes holds after each all-reduce, and what its communicator
// counted for it.
struct RingRun {
  int64_t n = 0;
  int64_t bytes_sent = 0, bytes_received = 0;
  std::vector<float> values;
};

// The file of one rank: its world size, then per size "n sent received" and n hex floats.
void write_ring_runs(const std::string& path, int world_size, const std::vector<RingRun>& runs);
std::vector<RingRun> read_ring_runs(const std::string& path, int* world_size);

// The program's body: `lab05_ring_processes --seed S --sizes n1,n2,... --out PREFIX` runs the
// student's ring_all_reduce once per size on the communicator of the launcher's environment, and
// rank r writes PREFIX.r. Returns the exit status.
int ring_processes_main(int argc, char** argv);

}  // namespace lab05
