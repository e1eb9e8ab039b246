// The harness of TODO 3 (input_pipeline.h): a virtual clock and a slow data set on it. The
// training loop that measures a pipeline in ticks instead of wall time is src/pipeline_loop.cpp.
//
// Why a virtual clock: whether a step found its batch ready depends, in wall time, on how the
// operating system schedules the threads, and a test of it would pass or fail by chance. Here a
// load of batch g takes cost(g) ticks from the tick it started at, a step takes S ticks, and the
// clock moves only when the loop moves it: to the end of a step, or to the next load that ends
// while the loop waits for its batch. Before each move the loop waits (in wall time) until every
// load that W workers and a depth of D allow has started, so a load's start tick, and so every
// count, is the same under every schedule. A pipeline that starts a load later than it could (a
// worker that is not there, a slot that is not freed) is let through after a grace of wall time
// and reported in RunResult::late; one that starts more than D is seen in max_in_flight.
#include <algorithm>
#include <random>
#include <stdexcept>

#include "gtl/runtime/error.h"
#include "input_pipeline.h"

namespace lab09 {

int64_t VirtualClock::now() const {
  const std::lock_guard<std::mutex> lock(mutex_);
  return now_;
}

SlowDataset::SlowDataset(Config config, std::shared_ptr<VirtualClock> clock)
    : config_(std::move(config)), clock_(std::move(clock)) {
  GTL_CHECK(clock_ != nullptr, "SlowDataset: no clock");
  GTL_CHECK(config_.batches > 0 && config_.rows > 0 && config_.cols > 0 && !config_.costs.empty(),
            "SlowDataset: " << config_.batches << " batches of " << config_.rows << " x "
                            << config_.cols << ", " << config_.costs.size() << " costs");
  for (int64_t c : config_.costs) GTL_CHECK(c >= 0, "SlowDataset: a cost of " << c << " ticks");
}

int64_t SlowDataset::cost(int64_t g) const {
  return config_.costs[static_cast<size_t>(g) % config_.costs.size()];
}

std::vector<float> SlowDataset::values(int64_t g) const {
  std::mt19937_64 gen(config_.seed * 1000003u + static_cast<uint64_t>(g % config_.batches));
  std::uniform_real_distribution<float> uniform(-1.f, 1.f);
  std::vector<float> v(static_cast<size_t>(config_.rows * config_.cols));
  for (float& x : v) x = uniform(gen);
  return v;
}

void SlowDataset::load(int64_t g, float* out) const {
  VirtualClock& c = *clock_;
  {
    std::unique_lock<std::mutex> lock(c.mutex_);
    if (!c.released_) {
      const int64_t start = c.now_, done = c.now_ + cost(g);
      c.loads_[g] = {start, done, false};
      ++c.started_;
      c.max_in_flight_ = std::max(c.max_in_flight_, c.started_ - c.asked_);
      c.cv_.notify_all();
      if (std::this_thread::get_id() == c.consumer_) {
        c.now_ = std::max(c.now_, done);  // the training loop's own thread did the work
      } else {
        while (c.now_ < done && !c.released_) {
          if (c.cv_.wait_for(lock, c.grace_) == std::cv_status::timeout && c.in_next_ &&
              c.now_ < done) {
            // The loop waits inside next() for a load that started only after next() was called:
            // nobody else will move the clock.
            if (c.late_.empty())
              c.late_ = "batch " + std::to_string(g) + " started loading only after next() asked";
            c.now_ = done;
          }
        }
      }
      auto it = c.loads_.find(g);
      if (it != c.loads_.end() && !it->second.returned) {
        it->second.returned = true;
        ++c.returned_;
      }
      c.cv_.notify_all();
    }
  }
  const std::vector<float> v = values(g);
  std::copy(v.begin(), v.end(), out);
  if (g == config_.fail_at)
    throw std::runtime_error("SlowDataset: batch " + std::to_string(g) + " is corrupt");
}

void PipelineBatch::wait(const gtl::Stream& stream) const {
  if (!ready) return;
#ifdef GTL_WITH_CUDA
  stream.wait(*ready);
  values.storage()->allocator().record_stream(values.storage()->data(), stream);
#else
  (void)stream;
  throw gtl::Error("PipelineBatch::wait: a CUDA event in a build without CUDA");
#endif
}

}  // namespace lab09
