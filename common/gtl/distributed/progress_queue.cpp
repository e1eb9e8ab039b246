// ProgressQueue and WorkState (see progress_queue.h).
#include "gtl/distributed/progress_queue.h"

namespace gtl::dist {

void WorkState::wait() {
  {
    std::unique_lock<std::mutex> lock(mutex);
    cv.wait(lock, [&] { return done; });
    if (error) std::rethrow_exception(error);
  }
  if (finish) finish();
}

bool WorkState::completed() {
  {
    std::lock_guard<std::mutex> lock(mutex);
    if (!done) return false;
    if (error) return true;
  }
  return !poll || poll();
}

void WorkState::complete(std::exception_ptr failure) {
  {
    std::lock_guard<std::mutex> lock(mutex);
    error = std::move(failure);
    done = true;
  }
  cv.notify_all();
}

ProgressQueue::ProgressQueue() : thread_([this] { loop(); }) {}

ProgressQueue::~ProgressQueue() {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    stop_ = true;
  }
  cv_.notify_all();
  thread_.join();
}

void ProgressQueue::push(std::function<void()> task) {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    tasks_.push_back(std::move(task));
  }
  cv_.notify_all();
}

void ProgressQueue::wait_idle() {
  std::unique_lock<std::mutex> lock(mutex_);
  cv_.wait(lock, [&] { return tasks_.empty() && !busy_; });
}

void ProgressQueue::loop() {
  std::unique_lock<std::mutex> lock(mutex_);
  for (;;) {
    cv_.wait(lock, [&] { return stop_ || !tasks_.empty(); });
    if (tasks_.empty()) return;  // stopping, and everything queued has run
    std::function<void()> task = std::move(tasks_.front());
    tasks_.pop_front();
    busy_ = true;
    lock.unlock();
    task();
    lock.lock();
    busy_ = false;
    cv_.notify_all();
  }
}

}  // namespace gtl::dist
