#include "gtl/io/result_file.h"

#include <cstdio>
#include <cstdlib>

#include "gtl/runtime/error.h"

namespace gtl::io {

namespace {

// A float as C99's hex notation ("0x1.8p-1", "-0x0p+0", "inf", "-nan"). Through double: every
// float is a double exactly, and printf has no float conversion.
std::string hex_float(float x) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%a", static_cast<double>(x));
  return buf;
}

// The float a whole word spells, or false if any of the word is not part of a number.
bool parse_float(const std::string& word, float& x) {
  char* end = nullptr;
  const double d = std::strtod(word.c_str(), &end);
  x = static_cast<float>(d);
  return !word.empty() && end == word.c_str() + word.size();
}

}  // namespace

ResultFileWriter::ResultFileWriter(std::string path, const std::string& backend, int world_size)
    : path_(std::move(path)), out_(path_) {
  GTL_CHECK(out_, "cannot write the result file " << path_);
  out_ << "backend " << backend << "\nworld_size " << world_size << '\n';
}

void ResultFileWriter::put_floats(const std::string& key, const std::vector<float>& values) {
  out_ << key << ' ' << values.size();
  for (float x : values) out_ << ' ' << hex_float(x);
  out_ << '\n';
}

void ResultFileWriter::put_count(const std::string& key, std::size_t n) {
  out_ << key << ' ' << n << '\n';
}

void ResultFileWriter::close() {
  out_.close();
  GTL_CHECK(out_, "writing the result file " << path_ << " failed");
}

ResultFileReader::ResultFileReader(std::string path) : path_(std::move(path)), in_(path_) {
  GTL_CHECK(in_, "no result file " << path_);
  expect_key("backend");
  in_ >> backend_;
  expect_key("world_size");
  in_ >> world_size_;
  GTL_CHECK(in_, "result file " << path_ << ": the header (backend, world_size) is cut short");
}

std::string ResultFileReader::next_key() {
  std::string key;
  in_ >> key;
  return in_ ? key : "the end of the file";
}

void ResultFileReader::expect_key(const std::string& key) {
  const std::string got = next_key();
  GTL_CHECK(got == key,
            "result file " << path_ << ": expected '" << key << "', got '" << got << "'");
}

std::vector<float> ResultFileReader::values_of(const std::string& key) {
  std::size_t n = 0;
  in_ >> n;
  GTL_CHECK(in_, "result file " << path_ << ": '" << key << "' has no count");
  std::vector<float> values(n);
  for (std::size_t i = 0; i < n; ++i) {
    std::string word;
    GTL_CHECK(in_ >> word, "result file " << path_ << ": '" << key << "' is truncated (" << i
                                          << " of " << n << " values)");
    GTL_CHECK(parse_float(word, values[i]), "result file " << path_ << ": '" << key << "' value "
                                                           << i << " is '" << word
                                                           << "', not a float");
  }
  return values;
}

std::vector<float> ResultFileReader::floats(const std::string& key) {
  expect_key(key);
  return values_of(key);
}

std::pair<std::string, std::vector<float>> ResultFileReader::next_floats() {
  std::string key;
  GTL_CHECK(in_ >> key, "result file " << path_ << ": expected another line, got the end");
  std::vector<float> values = values_of(key);
  return {key, std::move(values)};
}

std::size_t ResultFileReader::count(const std::string& key) {
  expect_key(key);
  std::size_t n = 0;
  GTL_CHECK(in_ >> n, "result file " << path_ << ": '" << key << "' has no count");
  return n;
}

}  // namespace gtl::io
