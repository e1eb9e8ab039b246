// TextDataset: a text as next-token training windows, for the GPT (nn/gpt.h).
//
//   std::string text = data::load_text_file("book.txt");   // or data::embedded_corpus()
//   auto [train, val] = data::split_text(text, 0.9);
//   auto ds = std::make_shared<data::TextDataset>(train, /*seq_len=*/64, /*stride=*/1);
//   // DataLoader batches of [B, T+1]; then
//   data::NextTokenBatch b = data::next_token_batch(batch.images);   // ids, targets [B, T]
//
// Sample i is the window of T+1 tokens starting at byte i * stride (tokens: byte_tokenizer.h).
// It is a Dataset like the digits, so the DataLoader shuffles it by (seed, epoch), shards it
// across ranks (DistributedSampler: rank r takes positions r, r+W, ... of each batch) and
// resumes it from a checkpoint with no change: the window is the "image" (T+1 floats holding the
// byte values, exact in float32), the label is unused (0). next_token_batch splits a batch of
// windows into the model's input ids[:, t] = w[t] and targets[:, t] = w[t+1], as int64.
// stride 1 uses every offset (T+1-byte windows overlapping: many samples from a small text);
// stride T gives disjoint windows (each target once: for validation).
#pragma once

#include <string>
#include <string_view>
#include <utility>

#include "gtl/data/dataset.h"

namespace gtl::data {

// The bytes of a UTF-8 text file; throws naming the path if it cannot be read, or the byte
// offset of the first invalid UTF-8 sequence.
std::string load_text_file(const std::string& path);
// Throws "<what>: invalid UTF-8 at byte N" unless `text` is valid UTF-8.
void check_utf8(std::string_view text, const char* what);
// The first `fraction` of the text (cut at a byte) and the rest: train and validation.
std::pair<std::string, std::string> split_text(const std::string& text, double fraction);

class TextDataset final : public Dataset {
 public:
  TextDataset(std::string text, int64_t seq_len, int64_t stride = 1);

  int64_t size() const override { return size_; }
  Shape sample_shape() const override { return {seq_len_ + 1}; }
  int64_t num_classes() const override { return 256; }  // the vocabulary
  int64_t get_into(int64_t index, float* window) const override;

  int64_t seq_len() const { return seq_len_; }
  const std::string& text() const { return text_; }

 private:
  std::string text_;
  int64_t seq_len_, stride_, size_;
};

struct NextTokenBatch {
  Tensor ids;      // [B, T] int64, on the windows' device
  Tensor targets;  // [B, T] int64
};
// windows [B, T+1] float32 (a DataLoader batch's images) -> ids and targets. Done on the host
// (B*(T+1) values, a few KB) and copied back: not worth a kernel.
NextTokenBatch next_token_batch(const Tensor& windows);

}  // namespace gtl::data
