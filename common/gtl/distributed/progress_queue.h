// ProgressQueue: the thread an in-process communicator runs its asynchronous operations on, the
// CPU counterpart of the CUDA stream an NCCL communicator enqueues on.
//
// Tasks run one at a time in the order they were pushed, so every rank executes its
// communicator's operations in issue order and the collectives of all ranks match, as on one
// NCCL stream. A rank that issues an async all-reduce and goes on computing really overlaps the
// two; it blocks only in Work::wait(), which waits for the task's WorkState.
//
// Destruction runs what is still queued, then joins the thread: a queued collective ends (it
// completes, or fails on an abort or a timeout), so nothing is left running or hanging.
#pragma once

#include <condition_variable>
#include <deque>
#include <exception>
#include <functional>
#include <mutex>
#include <thread>

namespace gtl::dist {

// The completion of one asynchronous operation, shared by the task and its Work handles.
struct WorkState {
  // Blocks until the task has run, then rethrows its failure, then runs `finish` (an isend's
  // wait for the receiver, say): the part of the wait that happens on the waiting thread.
  void wait();
  bool completed();  // polls without blocking
  // Called by the task: done, with or without a failure.
  void complete(std::exception_ptr error);

  std::mutex mutex;
  std::condition_variable cv;
  bool done = false;
  std::exception_ptr error;
  std::function<void()> finish;  // set by the task before complete(); may be empty
  std::function<bool()> poll;    // whether `finish` would return at once; may be empty
};

class ProgressQueue {
 public:
  ProgressQueue();
  ~ProgressQueue();  // runs the queued tasks, then joins the thread
  ProgressQueue(const ProgressQueue&) = delete;
  ProgressQueue& operator=(const ProgressQueue&) = delete;

  void push(std::function<void()> task);  // tasks report their own failures (WorkState)
  void wait_idle();                       // until every task pushed so far has run

 private:
  void loop();

  std::mutex mutex_;
  std::condition_variable cv_;
  std::deque<std::function<void()>> tasks_;
  bool busy_ = false;  // a task is running
  bool stop_ = false;
  std::thread thread_;
};

}  // namespace gtl::dist
