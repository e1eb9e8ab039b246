// Result files: what a real-process run (mpirun, one process a rank) hands back to the test that
// launched it. A header names the communication backend and the world size; then each line is a
// named vector of floats or a named count:
//
//   backend mpi
//   world_size 2
//   weights 3 0x1.8p-1 -0x0p+0 inf           <- put_floats("weights", {0.75f, -0.f, inf})
//   params 2                                 <- put_count("params", 2)
//
//   io::ResultFileWriter out(path, comm.backend(), comm.world_size());
//   out.put_floats("weights", weights);
//   out.close();                             // throws if anything failed to reach the file
//   io::ResultFileReader in(path);           // throws if there is no file or no header
//   std::vector<float> w = in.floats("weights");
//
// Why text with hex floats (printf's %a): a test compares the run's weights with an in-process
// run's bit for bit, so the file must give back the exact float. "%a" writes the binary value
// itself (0x1.8p-1 is 0.75), with no decimal rounding; -0, inf and NaN keep their sign. A NaN
// comes back as the quiet NaN of that sign (its payload bits are not written). Text keeps the
// file readable by a student (and by `diff`) when a test fails.
//
// Why a reader that checks each key: the lines are read in the order they were written, so a
// writer and a reader that disagree (a renamed field, a missing line, a file cut short by a
// crashed rank) fail at once with the file and the key, not with wrong numbers later.
#pragma once

#include <cstddef>
#include <fstream>
#include <string>
#include <utility>
#include <vector>

namespace gtl::io {

class ResultFileWriter {
 public:
  // Creates (or truncates) `path` and writes the header.
  ResultFileWriter(std::string path, const std::string& backend, int world_size);

  // One line: key, the number of values, then every value as a hex float.
  void put_floats(const std::string& key, const std::vector<float>& values);
  // One line: key and n.
  void put_count(const std::string& key, std::size_t n);
  // Flushes and throws gtl::Error naming the file if any write failed.
  void close();

 private:
  std::string path_;
  std::ofstream out_;
};

class ResultFileReader {
 public:
  // Opens `path` and reads the header; throws gtl::Error naming the file if either fails.
  explicit ResultFileReader(std::string path);

  const std::string& backend() const { return backend_; }
  int world_size() const { return world_size_; }

  // The next line's floats; throws naming the file and `key` if the line has another key, is
  // cut short, or holds a word that is not a float.
  std::vector<float> floats(const std::string& key);
  // The next line's key and floats, whatever the key (files that write names chosen at run
  // time, such as one line per parameter).
  std::pair<std::string, std::vector<float>> next_floats();
  // The next line's count; throws naming the file and `key` like floats().
  std::size_t count(const std::string& key);

 private:
  std::string next_key();
  void expect_key(const std::string& key);
  std::vector<float> values_of(const std::string& key);

  std::string path_;
  std::ifstream in_;
  std::string backend_;
  int world_size_ = 0;
};

}  // namespace gtl::io
