// IDX reader: valid MNIST-format files load; truncated, mislabelled or mismatched files are
// refused with a message naming the file, what was expected and what was found.
#include "gtl/data/idx_reader.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "gtl_test.h"

namespace gtl::data {
namespace {

namespace fs = std::filesystem;

class IdxReader : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::path(::testing::TempDir()) / ("gtl_idx_test_" + std::to_string(::getpid()));
    fs::create_directories(dir_);
  }
  void TearDown() override { fs::remove_all(dir_); }

  // Writes an IDX file: big-endian magic and dimensions, then `payload`.
  std::string write(const std::string& name, uint32_t magic, const std::vector<uint32_t>& dims,
                    const std::vector<uint8_t>& payload) {
    std::vector<uint8_t> bytes;
    auto put = [&](uint32_t v) {
      for (int shift = 24; shift >= 0; shift -= 8)
        bytes.push_back(static_cast<uint8_t>(v >> shift));
    };
    put(magic);
    for (uint32_t d : dims) put(d);
    bytes.insert(bytes.end(), payload.begin(), payload.end());
    const std::string path = (dir_ / name).string();
    std::ofstream(path, std::ios::binary)
        .write(reinterpret_cast<const char*>(bytes.data()),
               static_cast<std::streamsize>(bytes.size()));
    return path;
  }
  // Three 2x3 images whose pixel p of image i is 10 * i + p, and their labels.
  std::string images(const std::string& name = "images-idx3-ubyte", uint32_t count = 3) {
    std::vector<uint8_t> px;
    for (uint32_t i = 0; i < count; ++i)
      for (uint8_t p = 0; p < 6; ++p) px.push_back(static_cast<uint8_t>(10 * i + p));
    return write(name, 0x803, {count, 2, 3}, px);
  }
  std::string labels(std::vector<uint8_t> values = {7, 0, 9}) {
    return write("labels-idx1-ubyte", 0x801, {static_cast<uint32_t>(values.size())}, values);
  }

  fs::path dir_;
};

// Runs `f`, expects a gtl::Error, and checks that its message contains every fragment.
template <typename F>
void expect_error(F f, const std::vector<std::string>& fragments) {
  try {
    f();
    ADD_FAILURE() << "expected a gtl::Error mentioning '" << fragments.front() << "', none thrown";
  } catch (const Error& e) {
    const std::string msg = e.what();
    for (const std::string& frag : fragments) {
      EXPECT_NE(msg.find(frag), std::string::npos)
          << "error message should mention '" << frag << "' (a message a student can act on); "
          << "got: " << msg;
    }
  }
}

TEST_F(IdxReader, ValidFilesLoadScaledToUnitRange) {
  const IdxDataset ds(images(), labels());
  EXPECT_EQ(ds.size(), 3);
  EXPECT_EQ(ds.sample_shape(), (Shape{1, 2, 3}));
  EXPECT_EQ(ds.num_classes(), 10);
  const Sample s = ds.get(2);
  EXPECT_EQ(s.label, 9);
  std::vector<float> expected;
  for (int p = 0; p < 6; ++p) expected.push_back(static_cast<float>(20 + p) / 255.f);
  const std::string err = testing::compare(s.image, expected, {0.f, 1e-6});
  EXPECT_TRUE(err.empty()) << "pixels must be byte / 255: " << err;
  const IdxImages raw = read_idx_images(images());
  EXPECT_EQ(raw.count, 3);
  EXPECT_EQ(raw.rows, 2);
  EXPECT_EQ(raw.cols, 3);
  EXPECT_EQ(raw.pixels.size(), 18u);
}

TEST_F(IdxReader, TruncatedImagesFile) {
  const std::string path = write("cut-idx3-ubyte", 0x803, {3, 2, 3}, std::vector<uint8_t>(17, 0));
  expect_error([&] { read_idx_images(path); },
               {path, "truncated", "[3, 2, 3]", "34 bytes", "33 bytes"});
}

TEST_F(IdxReader, TruncatedHeader) {
  const std::string path = write("short-idx3-ubyte", 0x803, {3}, {});
  expect_error([&] { read_idx_images(path); }, {path, "truncated header", "16 bytes", "8"});
}

TEST_F(IdxReader, WrongMagic) {
  // A labels file passed as images: a classic mix-up.
  const std::string path = labels();
  expect_error([&] { read_idx_images(path); }, {path, "wrong magic", "0x803", "0x801"});
}

TEST_F(IdxReader, GzipFileIsRecognised) {
  const std::string path = write("images-idx3-ubyte.gz", 0x1F8B0800, {}, {0, 0, 0, 0});
  expect_error([&] { read_idx_images(path); }, {path, "gzip", "gunzip"});
}

TEST_F(IdxReader, MissingFile) {
  const std::string path = (dir_ / "no-such-file").string();
  expect_error([&] { read_idx_labels(path); }, {path, "cannot open"});
}

TEST_F(IdxReader, LabelOutOfRange) {
  const std::string lab = labels({7, 12, 9});
  expect_error([&] { IdxDataset(images(), lab); }, {lab, "label 12", "sample 1", "[0, 10)"});
}

TEST_F(IdxReader, ImageAndLabelCountsMustMatch) {
  const std::string img = images("four-idx3-ubyte", 4), lab = labels();
  expect_error([&] { IdxDataset(img, lab); }, {img, lab, "4 images", "3 labels"});
}

TEST_F(IdxReader, TrailingBytesAreRefused) {
  std::vector<uint8_t> values = {1, 2, 3, 4};
  const std::string path = write("long-idx1-ubyte", 0x801, {3}, values);
  expect_error([&] { read_idx_labels(path); }, {path, "trailing bytes", "11 bytes", "12 bytes"});
}

}  // namespace
}  // namespace gtl::data
