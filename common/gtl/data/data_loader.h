// DataLoader: shuffled, sharded, prefetched batches of a Dataset.
//
//   DataLoader loader(dataset, {.batch_size = 64, .seed = 1, .device = Device::cuda(0)});
//   for (int64_t epoch = loader.position().epoch; epoch < epochs; ++epoch)
//     while (std::optional<Batch> batch = loader.next()) {
//       batch->wait();                       // this stream waits for the batch's copy
//       train_step(batch->images, batch->labels);
//     }
//
// Why each piece is there:
// - Order. Epoch e visits a permutation that depends only on (seed, e) (Fisher-Yates driven by
//   Philox), so a run is reproducible and each epoch differs. position() (epoch, next batch) is
//   all a checkpoint needs to store: restore() continues with exactly the batches an
//   uninterrupted run would have seen.
// - Sharding (DistributedSampler). With world_size W, the epoch's permutation is padded by
//   repeating its first indices up to a multiple of W, and rank r takes positions r, r+W, ...
//   Every rank then has the same number of samples and batches: a rank that ran out early would
//   leave the others waiting forever in the gradient all-reduce.
// - Prefetching. A background thread prepares the next `prefetch` batches while the training
//   step runs, so producing data (decoding, augmenting, here drawing digits) hides behind compute.
//   It runs on across epoch boundaries and stops only when the loader is destroyed or restored.
// - Pinned staging and a copy stream (CUDA target). The GPU's copy engine reads page-locked
//   memory directly; from ordinary memory a copy is synchronous. The thread gathers a batch into
//   a pinned buffer, enqueues the host-to-device copy on its own stream (so it overlaps kernels
//   on the training stream) and records an Event. Batch::wait() makes the consumer's stream wait
//   on that event on the GPU, without blocking the host. On the CPU the gathered tensors are the
//   batch: no staging, no copy.
// - Errors. An exception thrown while producing a batch (a corrupt file, a bad index) is carried
//   to the consumer and rethrown by next() at the point where that batch would have come.
#pragma once

#include <condition_variable>
#include <cstdint>
#include <deque>
#include <exception>
#include <memory>
#include <mutex>
#include <optional>
#include <thread>
#include <vector>

#include "gtl/data/dataset.h"
#include "gtl/runtime/stream.h"

namespace gtl::data {

struct DataLoaderOptions {
  int64_t batch_size = 64;
  bool shuffle = true;
  bool drop_last = false;  // drop this rank's last, incomplete batch of each epoch
  uint64_t seed = 0;
  int rank = 0;        // this process's shard ...
  int world_size = 1;  // ... out of world_size
  int prefetch = 2;    // batches prepared ahead of the consumer
  Device device = Device::cpu();
};

// Where the loader stands: the next call of next() returns batch `batch` of epoch `epoch`.
struct LoaderPosition {
  int64_t epoch = 0;
  int64_t batch = 0;
  friend bool operator==(const LoaderPosition&, const LoaderPosition&) = default;
};

struct Batch {
  Tensor images;  // [n, sample_shape...] float32 on the loader's device
  Tensor labels;  // [n] int64
  int64_t epoch = 0, index = 0;
  std::shared_ptr<Event> ready;  // recorded after the device copy; null on the CPU

  // Makes `stream` wait (on the GPU) until the copy has landed, and tells the caching allocator
  // the tensors are used there. Call before using the tensors on a GPU; a no-op on the CPU.
  void wait(const Stream& stream = current_stream()) const;
};

class DataLoader {
 public:
  DataLoader(std::shared_ptr<const Dataset> dataset, DataLoaderOptions options);
  ~DataLoader();  // stops and joins the background thread, even mid-epoch
  DataLoader(const DataLoader&) = delete;
  DataLoader& operator=(const DataLoader&) = delete;

  const DataLoaderOptions& options() const { return options_; }
  int64_t samples_per_rank() const { return samples_per_rank_; }
  int64_t batches_per_epoch() const;
  // This rank's sample indices for `epoch`, in the order the batches visit them.
  std::vector<int64_t> epoch_indices(int64_t epoch) const;

  // The next batch, or std::nullopt at the end of the epoch (the position then moves to the
  // next epoch, so a second call starts it). Rethrows an error of the background thread.
  std::optional<Batch> next();

  LoaderPosition position() const { return position_; }
  // Continues from `position` (e.g. one saved in a checkpoint); drops prefetched batches.
  void restore(LoaderPosition position);

 private:
  struct Item {  // what the background thread hands over: a batch or the error it hit
    std::optional<Batch> batch;
    std::exception_ptr error;
  };

  void start_worker();
  void stop_worker();
  void produce(LoaderPosition from);
  Batch make_batch(int64_t epoch, int64_t index, const std::vector<int64_t>& indices);

  std::shared_ptr<const Dataset> dataset_;
  DataLoaderOptions options_;
  int64_t samples_per_rank_ = 0;
  LoaderPosition position_;
  std::shared_ptr<Allocator> host_allocator_;    // CPU target: the batch tensors
  std::shared_ptr<Allocator> device_allocator_;  // CUDA target: the batch tensors
  Stream copy_stream_;                           // CUDA target: host-to-device copies

  // CUDA target: pinned staging buffers, reused in turn; a buffer is refilled only after the
  // event of the copy that last read it has completed.
  struct Staging {
    Tensor images, labels;
    std::shared_ptr<Event> copied;
  };
  std::vector<Staging> staging_;

  std::thread worker_;
  std::mutex mutex_;
  std::condition_variable cv_;
  std::deque<Item> queue_;
  bool stop_ = false;
};

}  // namespace gtl::data
