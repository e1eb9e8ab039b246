// TextDataset: windows of a text as samples (see text_dataset.h).
#include "gtl/data/text_dataset.h"

#include <fstream>
#include <sstream>

namespace gtl::data {

void check_utf8(std::string_view text, const char* what) {
  std::size_t i = 0;
  while (i < text.size()) {
    const auto c = static_cast<unsigned char>(text[i]);
    // Lead byte: 0xxxxxxx, 110xxxxx (2 bytes), 1110xxxx (3), 11110xxx (4); then 10xxxxxx bytes.
    const std::size_t len = c < 0x80           ? 1
                            : (c >> 5) == 0x6  ? 2
                            : (c >> 4) == 0xE  ? 3
                            : (c >> 3) == 0x1E ? 4
                                               : 0;
    bool ok = len > 0 && i + len <= text.size();
    for (std::size_t k = 1; ok && k < len; ++k) {
      ok = (static_cast<unsigned char>(text[i + k]) >> 6) == 0x2;
    }
    GTL_CHECK(ok, what << ": invalid UTF-8 at byte " << i);
    i += len;
  }
}

std::string load_text_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  GTL_CHECK(in.good(), "load_text_file: cannot open '" << path << "'");
  std::ostringstream bytes;
  bytes << in.rdbuf();
  std::string text = bytes.str();
  check_utf8(text, ("load_text_file('" + path + "')").c_str());
  return text;
}

std::pair<std::string, std::string> split_text(const std::string& text, double fraction) {
  GTL_CHECK(fraction >= 0.0 && fraction <= 1.0,
            "split_text: fraction must be in [0, 1], got " << fraction);
  const auto cut = static_cast<std::size_t>(static_cast<double>(text.size()) * fraction);
  return {text.substr(0, cut), text.substr(cut)};
}

TextDataset::TextDataset(std::string text, int64_t seq_len, int64_t stride)
    : text_(std::move(text)), seq_len_(seq_len), stride_(stride) {
  GTL_CHECK(seq_len > 0 && stride > 0,
            "TextDataset: seq_len and stride must be positive, got " << seq_len << ", " << stride);
  const auto n = static_cast<int64_t>(text_.size());
  GTL_CHECK(n >= seq_len + 1, "TextDataset: a text of " << n << " bytes has no window of "
                                                        << seq_len + 1 << " bytes");
  size_ = (n - (seq_len + 1)) / stride_ + 1;
}

int64_t TextDataset::get_into(int64_t index, float* window) const {
  check_index("TextDataset", index);
  const auto start = static_cast<std::size_t>(index * stride_);
  for (int64_t t = 0; t <= seq_len_; ++t) {
    window[t] =
        static_cast<float>(static_cast<unsigned char>(text_[start + static_cast<std::size_t>(t)]));
  }
  return 0;
}

NextTokenBatch next_token_batch(const Tensor& windows) {
  GTL_CHECK(windows.dim() == 2 && windows.size(1) >= 2 && windows.dtype() == DType::Float32,
            "next_token_batch: expected float32 windows [B, T+1] with T >= 1, got "
                << shape_str(windows.shape()));
  const int64_t b = windows.size(0), t = windows.size(1) - 1;
  const std::vector<float> w = windows.to_vector();
  Tensor ids = Tensor::empty({b, t}, DType::Int64), targets = Tensor::empty({b, t}, DType::Int64);
  int64_t* ip = ids.data<int64_t>();
  int64_t* tp = targets.data<int64_t>();
  for (int64_t r = 0; r < b; ++r)
    for (int64_t c = 0; c < t; ++c) {
      ip[r * t + c] = static_cast<int64_t>(w[static_cast<std::size_t>(r * (t + 1) + c)]);
      tp[r * t + c] = static_cast<int64_t>(w[static_cast<std::size_t>(r * (t + 1) + c + 1)]);
    }
  if (windows.is_cuda()) return {ids.to(windows.device()), targets.to(windows.device())};
  return {ids, targets};
}

}  // namespace gtl::data
