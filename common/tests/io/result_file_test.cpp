// Result files: every float comes back bit for bit (zeros of both signs, infinities, NaN,
// denormals, random bit patterns), the text is the documented one the labs' real-process tests
// read, and a wrong key, a cut file or a word that is not a float is refused naming the file and
// the key.
#include "gtl/io/result_file.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <cstring>
#include <filesystem>
#include <fstream>
#include <limits>
#include <sstream>

#include "gtl/runtime/error.h"
#include "gtl/tensor/philox.h"
#include "gtl_test.h"

namespace gtl::io {
namespace {

namespace fs = std::filesystem;
using gtl::testing::expect_error_naming;
using Limits = std::numeric_limits<float>;

float from_bits(uint32_t bits) {
  float x;
  std::memcpy(&x, &bits, sizeof x);
  return x;
}

uint32_t bits_of(float x) {
  uint32_t bits;
  std::memcpy(&bits, &x, sizeof bits);
  return bits;
}

// The values whose text is special or whose bits a decimal round trip would change: both zeros,
// both infinities, the quiet NaN of each sign, the smallest denormal, the extremes, and a
// fraction with no short decimal form.
std::vector<float> special_values() {
  return {0.f,
          -0.f,
          Limits::infinity(),
          -Limits::infinity(),
          from_bits(0x7fc00000u),
          from_bits(0xffc00000u),
          Limits::denorm_min(),
          -Limits::denorm_min(),
          Limits::min(),
          Limits::max(),
          Limits::lowest(),
          1.f / 3.f,
          Limits::epsilon()};
}

// Random bit patterns that are not NaN (a NaN's payload is not written, see result_file.h).
std::vector<float> random_values(std::size_t n, uint64_t seed) {
  std::vector<float> v;
  for (uint64_t i = 0; v.size() < n; ++i) {
    const float x = from_bits(philox::philox4x32(i, seed).v[0]);
    if (x == x) v.push_back(x);
  }
  return v;
}

// "" when both hold the same bits, else the first element that differs.
std::string bit_diff(const std::vector<float>& got, const std::vector<float>& want) {
  if (got.size() != want.size())
    return std::to_string(got.size()) + " values, expected " + std::to_string(want.size());
  for (std::size_t i = 0; i < got.size(); ++i) {
    if (bits_of(got[i]) != bits_of(want[i])) {
      std::ostringstream s;
      s << "element " << i << ": bits 0x" << std::hex << bits_of(got[i]) << ", expected 0x"
        << bits_of(want[i]);
      return s.str();
    }
  }
  return "";
}

std::string read_text(const std::string& path) {
  std::ifstream in(path);
  std::ostringstream s;
  s << in.rdbuf();
  return s.str();
}

// A file name of its own under the test's temporary directory, removed when the test ends.
struct TempPath {
  explicit TempPath(const std::string& name)
      : path((fs::path(::testing::TempDir()) /
              ("gtl_result_" + std::to_string(::getpid()) + "_" + name))
                 .string()) {}
  ~TempPath() { fs::remove(path); }
  void write(const std::string& text) const { std::ofstream(path, std::ios::trunc) << text; }
  const std::string path;
};

TEST(ResultFile, EveryFloatRoundTripsBitForBit) {
  const TempPath file("round_trip");
  const std::vector<float> special = special_values(), random = random_values(1000, 7);
  ResultFileWriter out(file.path, "mpi", 4);
  out.put_floats("special", special);
  out.put_floats("random", random);
  out.put_floats("empty", {});
  out.close();

  ResultFileReader in(file.path);
  EXPECT_EQ(in.backend(), "mpi") << "the header's backend";
  EXPECT_EQ(in.world_size(), 4) << "the header's world size";
  EXPECT_EQ(bit_diff(in.floats("special"), special), "")
      << "zeros, infinities, NaN and denormals must come back as the same bits (hex floats)";
  EXPECT_EQ(bit_diff(in.floats("random"), random), "")
      << "random float bit patterns must come back as the same bits (hex floats, no rounding)";
  EXPECT_TRUE(in.floats("empty").empty()) << "an empty vector is a key and a count of 0";
}

TEST(ResultFile, TheTextIsTheHeaderThenOneLinePerKeyInHexFloats) {
  const TempPath file("text");
  ResultFileWriter out(file.path, "in_process", 2);
  out.put_floats("weights", {0.75f, -0.f, 1.f, -Limits::infinity()});
  out.put_count("params", 3);
  out.put_floats("loss", {from_bits(0x7fc00000u)});
  out.close();
  EXPECT_EQ(read_text(file.path),
            "backend in_process\nworld_size 2\nweights 4 0x1.8p-1 -0x0p+0 0x1p+0 -inf\n"
            "params 3\nloss 1 nan\n")
      << "the labs' real-process tests read this exact layout (result_file.h)";
}

TEST(ResultFile, LinesOfAnyKeyAndCountsComeBackInOrder) {
  const TempPath file("order");
  ResultFileWriter out(file.path, "mpi", 2);
  out.put_count("params", 2);
  out.put_floats("fc1.weight", {1.f, 2.f});
  out.put_floats("fc1.bias", {-3.5f});
  out.close();
  ResultFileReader in(file.path);
  EXPECT_EQ(in.count("params"), 2u) << "a count line";
  const auto [k1, v1] = in.next_floats();
  const auto [k2, v2] = in.next_floats();
  EXPECT_EQ(k1, "fc1.weight") << "next_floats must give the lines' own keys in written order";
  EXPECT_EQ(bit_diff(v1, {1.f, 2.f}), "") << "fc1.weight's values";
  EXPECT_EQ(k2, "fc1.bias") << "next_floats must give the lines' own keys in written order";
  EXPECT_EQ(bit_diff(v2, {-3.5f}), "") << "fc1.bias's values";
}

TEST(ResultFile, AWrongKeyNamesTheFileAndBothKeys) {
  const TempPath file("wrong_key");
  ResultFileWriter out(file.path, "mpi", 2);
  out.put_floats("weights", {1.f});
  out.close();
  ResultFileReader in(file.path);
  expect_error_naming([&] { in.floats("losses"); }, {file.path, "'losses'", "'weights'"},
                      "reading 'losses' where the file has 'weights'");
}

TEST(ResultFile, ATruncatedFileNamesTheFileAndTheKey) {
  const TempPath file("truncated");
  file.write("backend mpi\nworld_size 2\nweights 3 0x1p+0 0x1p+1");
  ResultFileReader in(file.path);
  expect_error_naming([&] { in.floats("weights"); },
                      {file.path, "'weights'", "truncated", "2 of 3"},
                      "a line cut after 2 of its 3 values");
  file.write("backend mpi\nworld_size 2\n");
  ResultFileReader empty(file.path);
  expect_error_naming([&] { empty.floats("weights"); },
                      {file.path, "'weights'", "the end of the file"},
                      "a file that ends before the key");
  expect_error_naming([&] { empty.next_floats(); }, {file.path, "the end"},
                      "next_floats at the end of the file");
}

TEST(ResultFile, AMissingFileOrHeaderOrANonFloatIsRefused) {
  const TempPath file("refused");
  expect_error_naming([&] { ResultFileReader in(file.path + ".none"); },
                      {file.path + ".none", "no result file"}, "a file that does not exist");
  file.write("weights 1 0x1p+0\n");
  expect_error_naming([&] { ResultFileReader in(file.path); },
                      {file.path, "'backend'", "'weights'"}, "a file without the backend header");
  file.write("backend mpi\nworld_size 2\nweights 2 0x1p+0 0x1q+0\n");
  ResultFileReader in(file.path);
  expect_error_naming([&] { in.floats("weights"); },
                      {file.path, "'weights'", "value 1", "'0x1q+0'"},
                      "a word that is not all a float");
}

TEST(ResultFile, AnUnwritablePathIsRefusedWithItsName) {
  const std::string bad = (fs::path(::testing::TempDir()) / "no_such_dir" / "result").string();
  expect_error_naming([&] { ResultFileWriter out(bad, "mpi", 1); }, {bad, "cannot write"},
                      "a path in a directory that does not exist");
}

}  // namespace
}  // namespace gtl::io
