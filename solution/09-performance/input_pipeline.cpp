// Lab 09, TODO 3: an input pipeline (input_pipeline.h). W worker threads load a slow data set's
// batches ahead of the training loop, at most D in flight, and next() hands them out in order.
//
// A loader that loads on the training loop's thread makes every step pay for its batch; one
// worker that loads while the step runs hides a batch that costs less than a step; a batch that
// costs more than a step needs several workers at once, and the depth bounds how far ahead they
// may run (memory, and staging buffers on a GPU). On a CUDA device each batch is loaded into
// pinned host memory, whose copy the copy engine runs on a stream of its own while kernels run
// on the training stream; the consumer's stream waits on the copy's event, the host does not.
#include <condition_variable>
#include <exception>
#include <map>
#include <mutex>
#include <thread>
#include <vector>

#include "gtl/memory/allocator.h"
#include "gtl/runtime/error.h"
#include "input_pipeline.h"

namespace lab09 {

struct InputPipeline::State {
  std::shared_ptr<const SlowDataset> dataset;
  PipelineOptions options;
  // SOLUTION(lab09) step 3
  struct Item {
    std::optional<PipelineBatch> batch;
    std::exception_ptr error;
  };
  std::mutex mutex;
  std::condition_variable cv;
  std::map<int64_t, Item> loaded;  // by batch g, until next() takes it
  int64_t claimed = 0;             // batches a worker has started: 0 .. claimed-1
  int64_t taken = 0;               // batches next() has returned
  int64_t position = 0;            // next()'s batch in the current epoch
  bool stop = false;
  std::vector<std::thread> workers;
  std::shared_ptr<gtl::Allocator> device_allocator;
  gtl::Stream copy_stream;

  void work() {
    const bool cuda = options.device.is_cuda();
    std::optional<gtl::DeviceGuard> guard;
    if (cuda) guard.emplace(options.device);
    const gtl::Shape shape = dataset->batch_shape();
    // This worker's pinned staging: refilled only once the copy that last read it has completed.
    gtl::Tensor staging;
    std::shared_ptr<gtl::Event> copied;
    if (cuda)
      staging = gtl::Tensor::empty_with(shape, gtl::DType::Float32, gtl::pinned_allocator());
    for (;;) {
      int64_t g = 0;
      {
        std::unique_lock<std::mutex> lock(mutex);
        cv.wait(lock, [&] { return stop || claimed - taken < options.depth; });
        if (stop) return;
        g = claimed++;
      }
      Item item;
      try {
        PipelineBatch b;
        b.epoch = g / dataset->batches();
        b.index = g % dataset->batches();
        if (!cuda) {
          b.values = gtl::Tensor::empty(shape);
          dataset->load(g, b.values.data<float>());
        } else {
          if (copied) copied->synchronize();
          dataset->load(g, staging.data<float>());
          b.values =
              gtl::Tensor::empty_with(shape, gtl::DType::Float32, device_allocator, copy_stream);
          b.values.copy_async_(staging, copy_stream);
          b.ready = std::make_shared<gtl::Event>();
          b.ready->record(copy_stream);
          copied = b.ready;
        }
        item.batch = std::move(b);
      } catch (...) {
        item.error = std::current_exception();
      }
      {
        const std::lock_guard<std::mutex> lock(mutex);
        loaded[g] = std::move(item);
      }
      cv.notify_all();
    }
  }
  // END SOLUTION(lab09)
};

InputPipeline::InputPipeline(std::shared_ptr<const SlowDataset> dataset, PipelineOptions options)
    : state_(std::make_unique<State>()) {
  GTL_CHECK(dataset != nullptr && options.workers > 0 && options.depth > 0,
            "InputPipeline: " << options.workers << " workers, depth " << options.depth);
  state_->dataset = std::move(dataset);
  state_->options = options;
  // SOLUTION(lab09) step 3
  if (options.device.is_cuda()) {
    state_->device_allocator = gtl::current_allocator(options.device);
    state_->copy_stream = gtl::Stream::create(options.device);
  }
  for (int w = 0; w < options.workers; ++w)
    state_->workers.emplace_back([s = state_.get()] { s->work(); });
  // END SOLUTION(lab09)
}

InputPipeline::~InputPipeline() {
  // SOLUTION(lab09) step 3
  {
    const std::lock_guard<std::mutex> lock(state_->mutex);
    state_->stop = true;
  }
  state_->cv.notify_all();
  for (std::thread& t : state_->workers) t.join();
  if (state_->options.device.is_cuda()) state_->copy_stream.synchronize();  // staging is freed
  // END SOLUTION(lab09)
}

std::optional<PipelineBatch> InputPipeline::next() {
  // SOLUTION(lab09) step 3
  State& s = *state_;
  if (s.position == s.dataset->batches()) {
    s.position = 0;
    return std::nullopt;
  }
  State::Item item;
  {
    std::unique_lock<std::mutex> lock(s.mutex);
    s.cv.wait(lock, [&] { return s.loaded.count(s.taken) > 0; });
    item = std::move(s.loaded[s.taken]);
    s.loaded.erase(s.taken);
    ++s.taken;
  }
  s.cv.notify_all();  // a slot is free
  ++s.position;
  if (item.error) std::rethrow_exception(item.error);
  return std::move(item.batch);
  // END SOLUTION(lab09)
}

}  // namespace lab09
