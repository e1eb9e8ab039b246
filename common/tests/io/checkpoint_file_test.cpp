// CheckpointFile: bit-exact round trips of every dtype and scalar kind, an atomic save that never
// destroys the previous file, and clear refusals of foreign, truncated, corrupt or newer files.
#include "gtl/io/checkpoint_file.h"

#include <gtest/gtest.h>
#include <signal.h>
#include <sys/resource.h>
#include <unistd.h>

#include <cstring>
#include <filesystem>
#include <fstream>
#include <limits>

#include "gtl/io/crc32.h"
#include "gtl/tensor/philox.h"
#include "gtl_test.h"

namespace gtl::io {
namespace {

namespace fs = std::filesystem;

// Random bytes of every element, NaN payloads and denormals included: a round trip that goes
// through float conversion anywhere would change some of them.
Tensor random_bits(const Shape& shape, DType dtype, uint64_t seed) {
  Tensor t = Tensor::empty(shape, dtype);
  auto* bytes = static_cast<uint8_t*>(t.data_ptr());
  for (std::size_t i = 0; i < t.nbytes(); ++i) {
    bytes[i] = static_cast<uint8_t>(philox::philox4x32(i, seed).v[0]);
  }
  return t;
}

bool same_bits(const Tensor& a, const Tensor& b) {
  return a.shape() == b.shape() && a.dtype() == b.dtype() && a.nbytes() == b.nbytes() &&
         std::memcmp(a.data_ptr(), b.data_ptr(), a.nbytes()) == 0;
}

std::vector<uint8_t> read_bytes(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

void write_bytes(const std::string& path, const std::vector<uint8_t>& bytes) {
  std::ofstream(path, std::ios::binary | std::ios::trunc)
      .write(reinterpret_cast<const char*>(bytes.data()),
             static_cast<std::streamsize>(bytes.size()));
}

template <typename F>
void expect_error(F f, const std::vector<std::string>& fragments) {
  try {
    f();
    ADD_FAILURE() << "expected a gtl::Error mentioning '" << fragments.front() << "', none thrown";
  } catch (const Error& e) {
    const std::string msg = e.what();
    for (const std::string& frag : fragments) {
      EXPECT_NE(msg.find(frag), std::string::npos)
          << "the error should mention '" << frag << "'; got: " << msg;
    }
  }
}

class CheckpointFileTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::path(::testing::TempDir()) / ("gtl_ckpt_test_" + std::to_string(::getpid()));
    fs::create_directories(dir_);
    path_ = (dir_ / "ckpt.bin").string();
  }
  void TearDown() override { fs::remove_all(dir_); }

  CheckpointFile small(int64_t step) {
    CheckpointFile c;
    c.put("w", Tensor::from_vector({1.f, 2.f, 3.f}, {3}));
    c.put_int("step", step);
    return c;
  }

  fs::path dir_;
  std::string path_;
};

TEST(Crc32, MatchesTheStandardCheckValue) {
  // The check value of CRC-32/ISO-HDLC (zip, gzip, PNG) for the ASCII digits 1..9.
  EXPECT_EQ(crc32("123456789", 9), 0xCBF43926u);
  EXPECT_EQ(crc32("", 0), 0u);
  EXPECT_EQ(crc32("6789", 4, crc32("12345", 5)), 0xCBF43926u) << "a running CRC must chain";
}

TEST_F(CheckpointFileTest, EveryDtypeRoundTripsBitExact) {
  const DType dtypes[] = {DType::Float32, DType::Float16, DType::BFloat16,
                          DType::Int32,   DType::Int64,   DType::UInt8};
  CheckpointFile c;
  uint64_t seed = 1;
  for (DType dt : dtypes) {
    c.put(std::string("t.") + dtype_name(dt), random_bits({3, 5, 7}, dt, seed++));
  }
  c.put("empty", Tensor::empty({0, 4}));
  c.put_int("int.min", std::numeric_limits<int64_t>::min());
  c.put_int("int.max", std::numeric_limits<int64_t>::max());
  c.put_double("double.tenth", 0.1);
  c.put_double("double.neg_zero", -0.0);
  c.put_double("double.inf", std::numeric_limits<double>::infinity());
  c.put_string("string.text", std::string("adamw \xce\xb2\x32 = 0.999\0tail", 24));
  c.put_string("string.empty", "");
  c.save(path_);

  const CheckpointFile back = CheckpointFile::load(path_);
  EXPECT_EQ(back.names(), c.names());
  seed = 1;
  for (DType dt : dtypes) {
    const std::string name = std::string("t.") + dtype_name(dt);
    EXPECT_TRUE(same_bits(back.get(name), random_bits({3, 5, 7}, dt, seed++)))
        << name << " changed in the round trip: tensors must be saved as raw bytes";
  }
  EXPECT_EQ(back.get("empty").shape(), (Shape{0, 4}));
  EXPECT_EQ(back.get_int("int.min"), std::numeric_limits<int64_t>::min());
  EXPECT_EQ(back.get_int("int.max"), std::numeric_limits<int64_t>::max());
  EXPECT_EQ(back.get_double("double.tenth"), 0.1) << "doubles must round-trip exactly";
  EXPECT_TRUE(std::signbit(back.get_double("double.neg_zero")));
  EXPECT_EQ(back.get_double("double.inf"), std::numeric_limits<double>::infinity());
  EXPECT_EQ(back.get_string("string.text"), std::string("adamw \xce\xb2\x32 = 0.999\0tail", 24));
  EXPECT_EQ(back.get_string("string.empty"), "");

  // The same content gives the same file, byte for byte (entries are sorted by name).
  const std::string again = (dir_ / "again.bin").string();
  back.save(again);
  EXPECT_EQ(read_bytes(again), read_bytes(path_));
}

TEST_F(CheckpointFileTest, PutTakesASnapshot) {
  Tensor w = Tensor::from_vector({1.f, 2.f}, {2});
  CheckpointFile c;
  c.put("w", w);
  w.fill_(7.0);
  EXPECT_EQ(c.get("w").to_vector(), (std::vector<float>{1.f, 2.f}))
      << "put() must copy: an optimizer step after put() must not change the checkpoint";
  Tensor out = Tensor::zeros({2});
  c.get_into("w", out);
  EXPECT_EQ(out.to_vector(), (std::vector<float>{1.f, 2.f}));
  Tensor wrong = Tensor::zeros({3});
  expect_error([&] { c.get_into("w", wrong); }, {"'w'", "[2]", "[3]"});
}

TEST_F(CheckpointFileTest, SaveLeavesNoTemporaryFile) {
  small(1).save(path_);
  small(2).save(path_);  // replaces
  EXPECT_EQ(CheckpointFile::load(path_).get_int("step"), 2);
  std::vector<std::string> files;
  for (const auto& entry : fs::directory_iterator(dir_)) files.push_back(entry.path().filename());
  EXPECT_EQ(files, std::vector<std::string>{"ckpt.bin"}) << "the temporary file must be renamed";
}

TEST_F(CheckpointFileTest, FailedSaveKeepsTheOldFile) {
  small(1).save(path_);
  // Make creating the temporary file fail: a directory already sits at its name. (A read-only
  // directory would not do: the tests may run as root, who may write anywhere.)
  const fs::path blocker = path_ + ".tmp-" + std::to_string(::getpid());
  fs::create_directory(blocker);
  expect_error([&] { small(2).save(path_); }, {path_, "save failed", "unchanged"});
  fs::remove(blocker);
  EXPECT_EQ(CheckpointFile::load(path_).get_int("step"), 1)
      << "the previous checkpoint must survive";
}

TEST_F(CheckpointFileTest, FailureMidWriteKeepsTheOldFile) {
  small(1).save(path_);
  // A file size limit makes write() fail part-way (EFBIG), like a full disk.
  CheckpointFile big = small(2);
  big.put("big", Tensor::zeros({64 * 1024}));  // 256 KiB
  rlimit old_limit{};
  ASSERT_EQ(getrlimit(RLIMIT_FSIZE, &old_limit), 0);
  auto* old_handler = signal(SIGXFSZ, SIG_IGN);  // get EFBIG instead of being killed
  rlimit limit = old_limit;
  limit.rlim_cur = 64 * 1024;
  ASSERT_EQ(setrlimit(RLIMIT_FSIZE, &limit), 0);
  std::string message;
  try {
    big.save(path_);
  } catch (const Error& e) {
    message = e.what();
  }
  setrlimit(RLIMIT_FSIZE, &old_limit);
  signal(SIGXFSZ, old_handler);
  EXPECT_NE(message.find("save failed"), std::string::npos)
      << "a write that fails part-way must throw; got: '" << message << "'";
  EXPECT_EQ(CheckpointFile::load(path_).get_int("step"), 1)
      << "the previous checkpoint must survive";
  EXPECT_FALSE(fs::exists(path_ + ".tmp-" + std::to_string(::getpid())))
      << "the half-written temporary file must be removed";
}

TEST_F(CheckpointFileTest, RefusesAFileThatIsNotACheckpoint) {
  write_bytes(path_, {'h', 'e', 'l', 'l', 'o', ' ', 'w', 'o', 'r', 'l', 'd', '\n'});
  expect_error([&] { CheckpointFile::load(path_); }, {path_, "not a GPU Training Labs checkpoint"});
}

TEST_F(CheckpointFileTest, RefusesATruncatedFile) {
  small(1).save(path_);
  std::vector<uint8_t> bytes = read_bytes(path_);
  const std::vector<uint8_t> full = bytes;
  bytes.resize(bytes.size() - 5);
  write_bytes(path_, bytes);
  expect_error([&] { CheckpointFile::load(path_); }, {path_, "truncated", "payload bytes"});
  write_bytes(path_, std::vector<uint8_t>(full.begin(), full.begin() + 20));
  expect_error([&] { CheckpointFile::load(path_); }, {path_, "truncated", "header"});
}

TEST_F(CheckpointFileTest, RefusesACorruptedByte) {
  small(1).save(path_);
  std::vector<uint8_t> bytes = read_bytes(path_);
  bytes[bytes.size() - 3] ^= 0x10;  // one bit of the data of the last entry
  write_bytes(path_, bytes);
  expect_error([&] { CheckpointFile::load(path_); }, {path_, "checksum mismatch", "corrupt"});
}

TEST_F(CheckpointFileTest, RefusesAnUnknownVersion) {
  small(1).save(path_);
  std::vector<uint8_t> bytes = read_bytes(path_);
  bytes[8] = 2;  // the version field follows the 8-byte magic
  write_bytes(path_, bytes);
  expect_error([&] { CheckpointFile::load(path_); },
               {path_, "unknown format version 2", "reads version 1"});
}

TEST_F(CheckpointFileTest, MissingFileAndMissingName) {
  expect_error([&] { CheckpointFile::load((dir_ / "nope.bin").string()); },
               {"nope.bin", "cannot open"});
  CheckpointFile c;
  c.put("model.w", Tensor::zeros({2}));
  c.put_int("step", 3);
  c.save(path_);
  const CheckpointFile back = CheckpointFile::load(path_);
  EXPECT_TRUE(back.has("step"));
  EXPECT_FALSE(back.has("optimizer.m"));
  expect_error([&] { back.get("optimizer.m"); },
               {path_, "no entry named 'optimizer.m'", "model.w, step"});
  expect_error([&] { back.get_int("model.w"); }, {"'model.w' is a tensor, not an int64"});
}

}  // namespace
}  // namespace gtl::io
