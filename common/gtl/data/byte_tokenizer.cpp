// ByteTokenizer: bytes are the tokens (see byte_tokenizer.h).
#include "gtl/data/byte_tokenizer.h"

#include "gtl/runtime/error.h"

namespace gtl::data {

std::vector<int64_t> ByteTokenizer::encode(std::string_view text) {
  std::vector<int64_t> ids;
  ids.reserve(text.size());
  for (char c : text) ids.push_back(static_cast<int64_t>(static_cast<unsigned char>(c)));
  return ids;
}

std::string ByteTokenizer::decode(const std::vector<int64_t>& ids) {
  std::string text;
  text.reserve(ids.size());
  for (std::size_t i = 0; i < ids.size(); ++i) {
    GTL_CHECK(ids[i] >= 0 && ids[i] < kVocab,
              "ByteTokenizer::decode: id " << ids[i] << " at " << i << " is not a byte");
    text.push_back(static_cast<char>(static_cast<unsigned char>(ids[i])));
  }
  return text;
}

}  // namespace gtl::data
