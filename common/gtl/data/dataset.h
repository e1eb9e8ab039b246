// Dataset: the interface every data source of the course implements.
//
// A dataset is a random-access array of (image, label) pairs. Samples are produced into memory
// the caller owns (`get_into`), so a DataLoader can gather a whole batch straight into one
// pinned host buffer without a temporary per sample. Implementations must make `get_into` safe
// to call from several threads at once (it is const and keeps no mutable state): the loader's
// background thread reads the dataset while the training thread runs.
#pragma once

#include <cstdint>
#include <vector>

#include "gtl/tensor/tensor.h"

namespace gtl::data {

// splitmix64: turns a seed and a stream number into well-separated Philox keys, so that e.g.
// (seed, epoch 1) and (seed + 1, epoch 0) do not share random numbers.
inline uint64_t splitmix64(uint64_t x) {
  x += 0x9E3779B97F4A7C15ull;
  x = (x ^ (x >> 30)) * 0xBF58476D1CE4E5B9ull;
  x = (x ^ (x >> 27)) * 0x94D049BB133111EBull;
  return x ^ (x >> 31);
}

struct Sample {
  std::vector<float> image;  // sample_numel() floats, row-major sample_shape()
  int64_t label = 0;         // in [0, num_classes())
};

class Dataset {
 public:
  virtual ~Dataset() = default;

  virtual int64_t size() const = 0;
  // Shape of one image, e.g. {1, 28, 28} (channels, height, width).
  virtual Shape sample_shape() const = 0;
  virtual int64_t num_classes() const = 0;
  // Writes sample `index`'s pixels (sample_numel() floats in [0, 1]) to `image`; returns its label.
  virtual int64_t get_into(int64_t index, float* image) const = 0;

  int64_t sample_numel() const { return shape_numel(sample_shape()); }
  // One sample, allocated (tests and examples; the loader uses gather()).
  Sample get(int64_t index) const;
  // Samples `indices` into images[i * sample_numel()...] and labels[i].
  void gather(const std::vector<int64_t>& indices, float* images, int64_t* labels) const;

 protected:
  // Throws "<what>: index i out of range [0, size)" for a bad index.
  void check_index(const char* what, int64_t index) const;
};

}  // namespace gtl::data
