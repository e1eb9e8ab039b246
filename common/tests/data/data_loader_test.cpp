// DataLoader: every sample once per epoch, a shuffle that depends only on (seed, epoch),
// disjoint equal shards across ranks, clean shutdown, errors carried to the consumer, and an
// exact resume from a saved position.
#include "gtl/data/data_loader.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <numeric>
#include <set>
#include <vector>

#include "gtl_test.h"

namespace gtl::data {
namespace {

// Sample i is a 1x2x2 image filled with i, labelled i % 3: a batch shows which samples it holds.
class IndexDataset : public Dataset {
 public:
  explicit IndexDataset(int64_t n, int64_t fail_at = -1) : n_(n), fail_at_(fail_at) {}
  int64_t size() const override { return n_; }
  Shape sample_shape() const override { return {1, 2, 2}; }
  int64_t num_classes() const override { return 3; }
  int64_t get_into(int64_t index, float* image) const override {
    check_index("IndexDataset", index);
    GTL_CHECK(index != fail_at_, "IndexDataset: sample " << index << " is unreadable");
    std::fill(image, image + 4, static_cast<float>(index));
    return index % 3;
  }

 private:
  int64_t n_, fail_at_;
};

// The sample indices of a batch, read back from its images, after checking labels and shape.
std::vector<int64_t> sample_ids(const Batch& b) {
  const int64_t n = b.images.size(0);
  EXPECT_EQ(b.images.shape(), (Shape{n, 1, 2, 2}));
  EXPECT_EQ(b.labels.shape(), (Shape{n}));
  std::vector<int64_t> ids;
  for (int64_t i = 0; i < n; ++i) {
    const float* img = b.images.data<float>() + 4 * i;
    const auto id = static_cast<int64_t>(img[0]);
    EXPECT_EQ(img[3], img[0]) << "image " << i << " of batch " << b.index << " is mixed up";
    EXPECT_EQ(b.labels.data<int64_t>()[i], id % 3) << "label does not belong to its image";
    ids.push_back(id);
  }
  return ids;
}

// Consumes the rest of the current epoch; returns the sample ids in order.
std::vector<int64_t> rest_of_epoch(DataLoader& loader,
                                   std::vector<int64_t>* batch_sizes = nullptr) {
  std::vector<int64_t> ids;
  while (std::optional<Batch> b = loader.next()) {
    const std::vector<int64_t> part = sample_ids(*b);
    ids.insert(ids.end(), part.begin(), part.end());
    if (batch_sizes) batch_sizes->push_back(static_cast<int64_t>(part.size()));
  }
  return ids;
}

std::shared_ptr<const Dataset> dataset(int64_t n) {
  return std::make_shared<IndexDataset>(n);
}

TEST(DataLoader, EverySampleExactlyOncePerEpoch) {
  DataLoader loader(dataset(103), {.batch_size = 10, .seed = 5});
  EXPECT_EQ(loader.batches_per_epoch(), 11);
  for (int64_t epoch = 0; epoch < 2; ++epoch) {
    EXPECT_EQ(loader.position(), (LoaderPosition{epoch, 0}));
    std::vector<int64_t> sizes;
    std::vector<int64_t> ids = rest_of_epoch(loader, &sizes);
    EXPECT_EQ(sizes, (std::vector<int64_t>{10, 10, 10, 10, 10, 10, 10, 10, 10, 10, 3}))
        << "without drop_last the last batch holds the remainder";
    std::sort(ids.begin(), ids.end());
    std::vector<int64_t> all(103);
    std::iota(all.begin(), all.end(), 0);
    EXPECT_EQ(ids, all) << "epoch " << epoch << " must visit each sample exactly once";
  }
  EXPECT_EQ(loader.position(), (LoaderPosition{2, 0}));
}

TEST(DataLoader, DropLastKeepsOnlyFullBatches) {
  DataLoader loader(dataset(103), {.batch_size = 10, .drop_last = true});
  EXPECT_EQ(loader.batches_per_epoch(), 10);
  std::vector<int64_t> sizes;
  rest_of_epoch(loader, &sizes);
  EXPECT_EQ(sizes, std::vector<int64_t>(10, 10));
}

TEST(DataLoader, ShuffleDependsOnlyOnSeedAndEpoch) {
  DataLoader a(dataset(200), {.batch_size = 16, .seed = 42});
  DataLoader b(dataset(200), {.batch_size = 16, .seed = 42});
  DataLoader other_seed(dataset(200), {.batch_size = 16, .seed = 43});
  const std::vector<int64_t> a0 = rest_of_epoch(a), a1 = rest_of_epoch(a);
  const std::vector<int64_t> b0 = rest_of_epoch(b), b1 = rest_of_epoch(b);
  EXPECT_EQ(a0, b0) << "same seed, same epoch: the order must be identical";
  EXPECT_EQ(a1, b1);
  EXPECT_NE(a0, a1) << "each epoch must use a new permutation";
  EXPECT_NE(a0, rest_of_epoch(other_seed)) << "another seed must give another order";
  EXPECT_EQ(a1, a.epoch_indices(1)) << "epoch_indices() is the order the batches follow";
  std::vector<int64_t> identity(200);
  std::iota(identity.begin(), identity.end(), 0);
  EXPECT_NE(a0, identity) << "shuffle = true must shuffle";
  DataLoader in_order(dataset(200), {.batch_size = 16, .shuffle = false});
  EXPECT_EQ(rest_of_epoch(in_order), identity) << "shuffle = false keeps the data set's order";
}

TEST(DataLoader, DistributedShardsAreDisjointCoveringAndEqual) {
  for (int64_t n : {100, 103}) {
    const int world = 4;
    std::vector<int64_t> all_ids;
    std::vector<int64_t> batch_counts;
    for (int rank = 0; rank < world; ++rank) {
      DataLoader loader(dataset(n),
                        {.batch_size = 8, .seed = 9, .rank = rank, .world_size = world});
      EXPECT_EQ(loader.samples_per_rank(), (n + world - 1) / world);
      std::vector<int64_t> sizes;
      const std::vector<int64_t> ids = rest_of_epoch(loader, &sizes);
      batch_counts.push_back(static_cast<int64_t>(sizes.size()));
      all_ids.insert(all_ids.end(), ids.begin(), ids.end());
    }
    EXPECT_EQ(std::set<int64_t>(batch_counts.begin(), batch_counts.end()).size(), 1u)
        << "every rank must get the same number of batches, or the all-reduce of the rank with "
        << "more batches waits forever (n = " << n << ")";
    const std::set<int64_t> distinct(all_ids.begin(), all_ids.end());
    EXPECT_EQ(static_cast<int64_t>(distinct.size()), n) << "the shards must cover the data set";
    // 103 samples over 4 ranks: padded to 104, so exactly one sample is seen twice; 100: none.
    const int64_t padded = (n + world - 1) / world * world;
    EXPECT_EQ(static_cast<int64_t>(all_ids.size()), padded)
        << "shards must be disjoint apart from the padding to a multiple of world_size";
  }
}

TEST(DataLoader, DistributedDropLastGivesEqualBatchCounts) {
  for (int rank = 0; rank < 3; ++rank) {
    DataLoader loader(dataset(50),
                      {.batch_size = 4, .drop_last = true, .rank = rank, .world_size = 3});
    std::vector<int64_t> sizes;
    rest_of_epoch(loader, &sizes);
    EXPECT_EQ(sizes, std::vector<int64_t>(4, 4)) << "rank " << rank << ": 17 samples -> 4 batches";
  }
}

TEST(DataLoader, EarlyDestructionDoesNotHang) {
  // The background thread is blocked on a full queue when the consumer walks away; the
  // destructor must wake and join it. (A hang fails this test by the CTest timeout.)
  for (int prefetch : {1, 3}) {
    DataLoader loader(dataset(1000), {.batch_size = 2, .prefetch = prefetch});
    ASSERT_TRUE(loader.next().has_value());
  }
  { DataLoader never_started(dataset(1000), {.batch_size = 2}); }
  SUCCEED();
}

TEST(DataLoader, ProducerErrorIsRethrownInOrder) {
  auto failing = std::make_shared<IndexDataset>(100, /*fail_at=*/57);
  DataLoader loader(failing, {.batch_size = 10, .shuffle = false});
  for (int b = 0; b < 5; ++b) {
    std::optional<Batch> batch = loader.next();
    ASSERT_TRUE(batch.has_value()) << "batches before the failing one must arrive";
    EXPECT_EQ(batch->index, b);
  }
  try {
    loader.next();
    ADD_FAILURE() << "the background thread's error must be rethrown by next()";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("sample 57 is unreadable"), std::string::npos)
        << "the original error must come through unchanged; got: " << e.what();
  }
  EXPECT_EQ(loader.position(), (LoaderPosition{0, 5})) << "a failed batch was not consumed";
}

TEST(DataLoader, ResumeContinuesWithTheSameBatches) {
  const DataLoaderOptions opts{.batch_size = 7, .seed = 3, .prefetch = 3};
  // Uninterrupted run: epoch 0, then 4 batches of epoch 1 (the "checkpoint"), then the rest.
  DataLoader reference(dataset(60), opts);
  rest_of_epoch(reference);
  for (int b = 0; b < 4; ++b) reference.next();
  const LoaderPosition saved = reference.position();
  EXPECT_EQ(saved, (LoaderPosition{1, 4}));
  std::vector<int64_t> expected = rest_of_epoch(reference);
  const std::vector<int64_t> next_epoch = rest_of_epoch(reference);
  expected.insert(expected.end(), next_epoch.begin(), next_epoch.end());

  // A new process: a fresh loader restored to the saved position.
  DataLoader resumed(dataset(60), opts);
  resumed.restore(saved);
  std::optional<Batch> first = resumed.next();
  ASSERT_TRUE(first.has_value());
  EXPECT_EQ(first->epoch, 1);
  EXPECT_EQ(first->index, 4);
  std::vector<int64_t> got = sample_ids(*first);
  for (int e = 0; e < 2; ++e) {
    const std::vector<int64_t> part = rest_of_epoch(resumed);
    got.insert(got.end(), part.begin(), part.end());
  }
  EXPECT_EQ(got, expected) << "after restore() the loader must replay exactly the batches an "
                           << "uninterrupted run would have produced";

  // restore() also rewinds a loader that has prefetched ahead.
  resumed.restore({0, 0});
  DataLoader fresh(dataset(60), opts);
  EXPECT_EQ(rest_of_epoch(resumed), rest_of_epoch(fresh));
  EXPECT_THROW(resumed.restore({0, 99}), Error) << "a batch beyond the epoch must be refused";
}

TEST(DataLoader, CpuBatchesNeedNoWait) {
  DataLoader loader(dataset(10), {.batch_size = 4});
  std::optional<Batch> b = loader.next();
  ASSERT_TRUE(b.has_value());
  EXPECT_EQ(b->images.device(), Device::cpu());
  EXPECT_EQ(b->ready, nullptr) << "on the CPU there is no copy to wait for";
  b->wait();  // a no-op
  EXPECT_EQ(b->images.dtype(), DType::Float32);
  EXPECT_EQ(b->labels.dtype(), DType::Int64);
}

TEST(DataLoader, RejectsBadOptions) {
  EXPECT_THROW(DataLoader(dataset(10), {.batch_size = 0}), Error);
  EXPECT_THROW(DataLoader(dataset(10), {.rank = 2, .world_size = 2}), Error);
  EXPECT_THROW(DataLoader(nullptr, {}), Error);
}

}  // namespace
}  // namespace gtl::data
