#pragma once
// A fixed set of worker threads and a dynamic task queue across them
// (issue 14): parallel_for(n, f) runs f(task) for task = 0 .. n-1, each
// thread (the caller included) taking the next task from a shared atomic
// counter until none is left, then returns once all have finished. Tasks
// of uneven cost balance themselves; no task runs twice.
//
// The expert kernels split one expert's rows into tasks (gate and up rows,
// then down rows), so every thread reads a disjoint part of the weights and
// writes disjoint outputs: the result does not depend on the thread count.
//
// Workers wait on a condition variable between calls (no spinning: a
// shared 2-core machine must not lose a core to an idle pool); the hand-off
// cost is what `moebench probe` reports as dispatch_us.

#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <functional>
#include <mutex>
#include <thread>
#include <vector>

namespace moebench {

class ThreadPool {
 public:
  // `threads` >= 1 counts the caller: threads - 1 workers are started.
  explicit ThreadPool(int threads);
  ~ThreadPool();
  ThreadPool(const ThreadPool&) = delete;
  ThreadPool& operator=(const ThreadPool&) = delete;

  int threads() const { return int(workers_.size()) + 1; }
  // Runs f(0) .. f(n-1) across the threads; returns when all are done. An
  // exception thrown by a task is rethrown here (the first one; the other
  // tasks still run). Not reentrant: f must not call parallel_for.
  void parallel_for(int64_t n, const std::function<void(int64_t)>& f);

 private:
  void work();
  void drain();

  std::vector<std::thread> workers_;
  std::mutex mu_;
  std::condition_variable start_cv_, done_cv_;
  const std::function<void(int64_t)>* job_ = nullptr;
  int64_t n_ = 0;
  std::atomic<int64_t> next_{0};
  int64_t generation_ = 0;
  int active_ = 0;  // workers still inside the current call
  bool stop_ = false;
  std::exception_ptr error_;
};

// Splits [0, n) into chunks of `grain` (the last may be shorter) and runs
// f(begin, end) for each on `pool`, or inline on the caller when pool is null.
void parallel_ranges(ThreadPool* pool, int64_t n, int64_t grain,
                     const std::function<void(int64_t, int64_t)>& f);

}  // namespace moebench
