// The harness of TODO 3 (input_pipeline.h): run_pipeline, the training loop that measures a
// pipeline on the virtual clock of src/virtual_clock.cpp (whose opening comment says why a virtual
// clock). Kept apart from the clock and the data set, which the judge links without the student's
// pipeline.
#include <algorithm>

#include "gtl/runtime/error.h"
#include "gtl/runtime/host_sync.h"
#include "input_pipeline.h"

namespace lab09 {

// run_pipeline's side of the clock.
struct ClockDriver {
  VirtualClock& c;
  int64_t workers, depth;
  int64_t consumed = 0;  // batches next() has returned

  // Every load ending by now has returned, and every load W and D allow has started.
  bool settled() const {
    for (const auto& [g, load] : c.loads_)
      if (load.done <= c.now_ && !load.returned) return false;
    return c.started_ >= std::min(consumed + depth, c.returned_ + workers);
  }
  void settle(std::unique_lock<std::mutex>& lock) {
    if (c.cv_.wait_for(lock, c.grace_, [&] { return settled(); })) return;
    if (c.late_.empty())
      c.late_ = "at tick " + std::to_string(c.now_) + ", " + std::to_string(c.started_) +
                " loads had started; " + std::to_string(consumed) + " batches consumed, " +
                std::to_string(c.returned_) + " loads returned, W = " + std::to_string(workers) +
                " and D = " + std::to_string(depth) + " allow " +
                std::to_string(std::min(consumed + depth, c.returned_ + workers));
    c.grace_ = std::chrono::milliseconds(50);  // the answer is wrong already: finish quickly
  }
  // The earliest tick a pending load ends at, or -1.
  int64_t next_event() const {
    int64_t t = -1;
    for (const auto& [g, load] : c.loads_)
      if (!load.returned && (t < 0 || load.done < t)) t = load.done;
    return t;
  }
  void advance_to(std::unique_lock<std::mutex>& lock, int64_t t) {
    c.now_ = std::max(c.now_, t);
    c.cv_.notify_all();
    settle(lock);
  }
  static RunResult run(const std::shared_ptr<SlowDataset>& dataset, const PipelineOptions& options,
                       const RunConfig& config,
                       const std::function<std::unique_ptr<InputPipeline>()>& make);
  bool returned(int64_t g) const {
    auto it = c.loads_.find(g);
    return it != c.loads_.end() && it->second.returned;
  }
};

RunResult run_pipeline(const std::shared_ptr<SlowDataset>& dataset, const PipelineOptions& options,
                       const RunConfig& config,
                       const std::function<std::unique_ptr<InputPipeline>()>& make) {
  return ClockDriver::run(dataset, options, config, make);
}

RunResult ClockDriver::run(const std::shared_ptr<SlowDataset>& dataset,
                           const PipelineOptions& options, const RunConfig& config,
                           const std::function<std::unique_ptr<InputPipeline>()>& make) {
  GTL_CHECK(
      dataset != nullptr && config.step_ticks >= 0 && config.epochs > 0,
      "run_pipeline: " << config.epochs << " epochs of steps of " << config.step_ticks << " ticks");
  VirtualClock& c = *dataset->clock_;
  {
    const std::lock_guard<std::mutex> lock(c.mutex_);
    c.now_ = 0;
    c.released_ = false;
    c.loads_.clear();
    c.started_ = c.returned_ = c.asked_ = c.max_in_flight_ = 0;
    c.consumer_ = std::this_thread::get_id();
    c.in_next_ = false;
    c.grace_ = std::chrono::milliseconds(10000);
    c.late_.clear();
  }
  ClockDriver d{c, options.workers, options.depth};
  RunResult r;
  std::unique_ptr<InputPipeline> pipeline = make();
  const int64_t n = dataset->batches();
  // Calls next() with the clock unlocked, counting this thread's host synchronisations.
  auto next = [&](std::unique_lock<std::mutex>& lock) {
    c.in_next_ = true;
    lock.unlock();
    const gtl::HostSyncCounts before = gtl::host_sync_counts();
    std::optional<PipelineBatch> batch;
    std::exception_ptr error;
    try {
      batch = pipeline->next();
    } catch (...) {
      error = std::current_exception();
    }
    r.host_syncs += (gtl::host_sync_counts() - before).total();
    lock.lock();
    c.in_next_ = false;
    if (error) std::rethrow_exception(error);
    return batch;
  };
  try {
    std::unique_lock<std::mutex> lock(c.mutex_);
    for (int64_t epoch = 0; epoch < config.epochs; ++epoch) {
      for (int64_t b = 0; b < n; ++b) {
        const int64_t g = epoch * n + b, step = r.steps;
        d.settle(lock);
        const int64_t asked_at = c.now_;
        // The loop waits: the clock runs on to each load that ends, until batch g has loaded.
        while (!d.returned(g)) {
          const int64_t t = d.next_event();
          if (t < 0) break;  // g has not started: only next() can say why
          d.advance_to(lock, t);
        }
        ++c.asked_;
        std::optional<PipelineBatch> batch;
        try {
          batch = next(lock);
        } catch (const std::exception& e) {
          r.threw_at = step;
          r.thrown = e.what();
          break;
        }
        ++d.consumed;
        auto load = c.loads_.find(g);
        if (load == c.loads_.end() || load->second.done > asked_at) {
          ++r.waits;
          r.waited_steps.push_back(step);
        }
        const std::string where = "step " + std::to_string(step) + " (epoch " +
                                  std::to_string(epoch) + ", batch " + std::to_string(b) + ")";
        if (!batch) {
          r.errors.push_back(where + ": next() returned no batch before the end of the epoch");
        } else {
          if (batch->epoch != epoch || batch->index != b)
            r.errors.push_back(where + ": next() returned epoch " + std::to_string(batch->epoch) +
                               ", batch " + std::to_string(batch->index));
          lock.unlock();
          const gtl::HostSyncCounts before = gtl::host_sync_counts();
          batch->wait();  // the step's stream waits for the copy: no host synchronisation
          r.host_syncs += (gtl::host_sync_counts() - before).total();
          const std::vector<float> got = batch->values.defined()
                                             ? batch->values.to(gtl::Device::cpu()).to_vector()
                                             : std::vector<float>{};
          lock.lock();
          r.seen.insert(r.seen.end(), got.begin(), got.end());
          if (got != dataset->values(g))
            r.errors.push_back(where + ": the batch's values are not the data set's batch " +
                               std::to_string(b) + " (" + std::to_string(got.size()) +
                               " values, bitwise)");
        }
        ++r.steps;
        if (r.errors.size() > 8) break;
        // The training step: S ticks, during which loads end and the workers start new ones.
        d.settle(lock);
        const int64_t end = c.now_ + config.step_ticks;
        for (int64_t t = d.next_event(); t >= 0 && t <= end; t = d.next_event())
          d.advance_to(lock, t);
        d.advance_to(lock, end);
      }
      if (r.threw_at >= 0 || r.errors.size() > 8) break;
      std::optional<PipelineBatch> after;
      try {
        after = next(lock);
      } catch (const std::exception& e) {
        r.errors.push_back("the end of epoch " + std::to_string(epoch) + ": next() threw " +
                           e.what());
        break;
      }
      if (after)
        r.errors.push_back("the end of epoch " + std::to_string(epoch) +
                           ": next() returned a batch (epoch " + std::to_string(after->epoch) +
                           ", batch " + std::to_string(after->index) + ") instead of none");
    }
    r.max_in_flight = c.max_in_flight_;
    r.ticks = c.now_;
    r.late = c.late_;
    c.released_ = true;
    c.cv_.notify_all();
  } catch (...) {
    const std::lock_guard<std::mutex> lock(c.mutex_);
    c.released_ = true;
    c.cv_.notify_all();
    throw;
  }
  pipeline.reset();  // the workers may be loading, or waiting for a slot: it must not hang
  return r;
}

}  // namespace lab09
