#include "gtl/data/idx_reader.h"

#include <fstream>
#include <iterator>

namespace gtl::data {

namespace {

constexpr uint32_t kImagesMagic = 0x00000803;  // uint8 data, 3 dimensions
constexpr uint32_t kLabelsMagic = 0x00000801;  // uint8 data, 1 dimension

std::vector<uint8_t> read_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  GTL_CHECK(in, "IDX file '" << path << "': cannot open it (does it exist?)");
  return std::vector<uint8_t>(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
}

uint32_t big_endian_u32(const std::vector<uint8_t>& bytes, std::size_t at) {
  return (uint32_t{bytes[at]} << 24) | (uint32_t{bytes[at + 1]} << 16) |
         (uint32_t{bytes[at + 2]} << 8) | uint32_t{bytes[at + 3]};
}

// Checks the magic and the sizes; returns the dimensions.
std::vector<int64_t> read_header(const std::vector<uint8_t>& bytes, const std::string& path,
                                 uint32_t magic, const char* kind) {
  const std::size_t ndim = magic & 0xFF;
  const std::size_t header = 4 + 4 * ndim;
  GTL_CHECK(bytes.size() >= 4, "IDX file '" << path << "': expected at least a 4-byte magic, found "
                                            << bytes.size() << " bytes");
  GTL_CHECK(!(bytes[0] == 0x1F && bytes[1] == 0x8B),
            "IDX file '" << path << "' is gzip-compressed; only uncompressed IDX files are read "
                         << "(run gunzip on it first)");
  const uint32_t found = big_endian_u32(bytes, 0);
  GTL_CHECK(found == magic, "IDX file '" << path << "': wrong magic number for " << kind
                                         << ": expected 0x" << std::hex << magic << ", found 0x"
                                         << found << std::dec
                                         << " (is it an IDX file of the right kind?)");
  GTL_CHECK(bytes.size() >= header, "IDX file '" << path << "': truncated header: expected "
                                                 << header << " bytes, found " << bytes.size());
  std::vector<int64_t> dims;
  int64_t payload = 1;
  for (std::size_t d = 0; d < ndim; ++d) {
    dims.push_back(big_endian_u32(bytes, 4 + 4 * d));
    // A corrupt header can promise more than int64 holds: saturate, it is truncated anyway.
    constexpr int64_t kHuge = int64_t{1} << 50;
    payload = (dims.back() != 0 && payload > kHuge / dims.back()) ? kHuge : payload * dims.back();
  }
  const auto expected = static_cast<int64_t>(header) + payload;
  GTL_CHECK(static_cast<int64_t>(bytes.size()) == expected,
            "IDX file '" << path << "': "
                         << (static_cast<int64_t>(bytes.size()) < expected ? "truncated"
                                                                           : "trailing bytes")
                         << ": its header promises " << shape_str(dims) << " " << kind << ", i.e. "
                         << expected << " bytes, but the file has " << bytes.size() << " bytes");
  return dims;
}

}  // namespace

IdxImages read_idx_images(const std::string& path) {
  std::vector<uint8_t> bytes = read_file(path);
  const std::vector<int64_t> dims = read_header(bytes, path, kImagesMagic, "images");
  GTL_CHECK(dims[1] > 0 && dims[2] > 0, "IDX file '" << path << "': expected positive image rows "
                                                     << "and columns, found " << shape_str(dims));
  IdxImages images{dims[0], dims[1], dims[2], {}};
  images.pixels.assign(bytes.begin() + 16, bytes.end());
  return images;
}

std::vector<uint8_t> read_idx_labels(const std::string& path) {
  std::vector<uint8_t> bytes = read_file(path);
  read_header(bytes, path, kLabelsMagic, "labels");
  return std::vector<uint8_t>(bytes.begin() + 8, bytes.end());
}

IdxDataset::IdxDataset(const std::string& images_path, const std::string& labels_path,
                       int64_t num_classes)
    : images_(read_idx_images(images_path)),
      labels_(read_idx_labels(labels_path)),
      num_classes_(num_classes) {
  GTL_CHECK(images_.count == static_cast<int64_t>(labels_.size()),
            "IdxDataset: '" << images_path << "' holds " << images_.count << " images but '"
                            << labels_path << "' holds " << labels_.size()
                            << " labels; expected the same number (mismatched files?)");
  GTL_CHECK(images_.count > 0, "IdxDataset: '" << images_path << "' holds no images");
  for (std::size_t i = 0; i < labels_.size(); ++i) {
    GTL_CHECK(labels_[i] < num_classes,
              "IDX file '" << labels_path << "': label " << int{labels_[i]} << " of sample " << i
                           << " is out of range: expected a class in [0, " << num_classes << ")");
  }
}

int64_t IdxDataset::get_into(int64_t index, float* image) const {
  check_index("IdxDataset::get_into", index);
  const int64_t numel = images_.rows * images_.cols;
  const uint8_t* src = images_.pixels.data() + index * numel;
  for (int64_t p = 0; p < numel; ++p) image[p] = src[p] * (1.0f / 255.0f);
  return labels_[static_cast<std::size_t>(index)];
}

}  // namespace gtl::data
