// SyntheticDigits: an MNIST-like data set drawn on the fly, so every lab has data without a
// download.
//
// Each digit 0-9 is a few pen strokes (lines and elliptic arcs) in a unit box. A sample bends
// them with a smooth random warp, then applies a random affine map (rotation, shear, scale,
// aspect, translation), rasterises them at a random stroke width with anti-aliased edges
// (coverage falls off linearly over one pixel), and adds Gaussian pixel noise. The result is
// 28x28 grayscale in [0, 1], the layout of MNIST.
//
// Why counter-based randomness (gtl/tensor/philox.h): sample i is a pure function of
// (seed, split, i). Any sample can be drawn alone, in any order, on any thread, and is the same
// bytes every time, so shuffling, sharding across ranks and resuming from a checkpoint never
// need to store the data. Train and test use different key streams and never share a sample.
//
// Labels are i % 10: classes are exactly balanced; shuffle (the DataLoader does) before training.
// Difficulty, measured by common/tests/data/synthetic_digits_test.cpp (10,000 training and 2,000
// test samples): nearest centroid 0.59, a linear softmax classifier 0.85, an MLP 784-64-10 0.99.
// Jitter and noise keep the linear model well below 100%; the hidden layer is worth learning.
#pragma once

#include <cstdint>

#include "gtl/data/dataset.h"

namespace gtl::data {

enum class Split : uint8_t { Train, Test };

class SyntheticDigits final : public Dataset {
 public:
  static constexpr int kSide = 28;
  static constexpr int64_t kDefaultTrainSize = 60000, kDefaultTestSize = 10000;

  // `noise_std`: standard deviation of the Gaussian noise added to every pixel before clamping.
  explicit SyntheticDigits(int64_t size, Split split = Split::Train, uint64_t seed = 0,
                           float noise_std = 0.15f);

  int64_t size() const override { return size_; }
  Shape sample_shape() const override { return {1, kSide, kSide}; }
  int64_t num_classes() const override { return 10; }
  int64_t get_into(int64_t index, float* image) const override;

 private:
  int64_t size_;
  uint64_t shape_key_;  // Philox key for the per-sample geometry
  uint64_t noise_key_;  // Philox key for the pixel noise
  float noise_std_;
};

}  // namespace gtl::data
