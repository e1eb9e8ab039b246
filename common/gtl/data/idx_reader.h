// Reading MNIST / Fashion-MNIST files you already have, in the IDX format of
// http://yann.lecun.com/exdb/mnist/ (train-images-idx3-ubyte, train-labels-idx1-ubyte, ...).
//
// IDX: a 4-byte big-endian magic (0x00000803 for uint8 images [n, rows, cols], 0x00000801 for
// uint8 labels [n]), then one big-endian uint32 per dimension, then the bytes row-major.
// Uncompressed files only: gunzip the .gz downloads first (a gzip file is recognised and the
// error says so). Every check names the file, what was expected and what was found, because a
// truncated download otherwise shows up much later as a model that does not learn.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "gtl/data/dataset.h"

namespace gtl::data {

struct IdxImages {
  int64_t count = 0, rows = 0, cols = 0;
  std::vector<uint8_t> pixels;  // count * rows * cols bytes
};

IdxImages read_idx_images(const std::string& path);
std::vector<uint8_t> read_idx_labels(const std::string& path);

// Images scaled to [0, 1] (pixel / 255) with shape {1, rows, cols}. Checks that both files hold
// the same number of samples and that every label is below `num_classes`.
class IdxDataset final : public Dataset {
 public:
  IdxDataset(const std::string& images_path, const std::string& labels_path,
             int64_t num_classes = 10);

  int64_t size() const override { return images_.count; }
  Shape sample_shape() const override { return {1, images_.rows, images_.cols}; }
  int64_t num_classes() const override { return num_classes_; }
  int64_t get_into(int64_t index, float* image) const override;

 private:
  IdxImages images_;
  std::vector<uint8_t> labels_;
  int64_t num_classes_;
};

}  // namespace gtl::data
