// ByteTokenizer: text <-> token ids, one token per byte (vocabulary 256).
//
// The simplest tokenizer that covers every input: any UTF-8 text (indeed any bytes) encodes
// losslessly, with no vocabulary file and no unknown token. The price is length: a multi-byte
// character costs several tokens, and the model must learn spelling from bytes. GPT-2's BPE
// merges frequent byte pairs into ~50k tokens instead; for a course-sized model and corpus the
// byte level keeps the embedding table (256 x D) and the head tiny.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace gtl::data {

class ByteTokenizer {
 public:
  static constexpr int64_t kVocab = 256;
  static std::vector<int64_t> encode(std::string_view text);
  // Throws on an id outside [0, 256).
  static std::string decode(const std::vector<int64_t>& ids);
};

}  // namespace gtl::data
