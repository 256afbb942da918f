// Copyright 2026 The moebench authors. SPDX-License-Identifier: Apache-2.0
#pragma once
// A fixed set of worker threads and a dynamic task queue across them
//: parallel_for(n, f) runs f(task) for task = 0 .. n-1, each
// thread (the caller included) taking the next task from a shared atomic
// counter until none is left, then returns once all have finished. Tasks
// of uneven cost balance themselves; no task runs twice.
//
// The expert kernels split one expert's rows into tasks (gate and up rows,
// then down rows), so every thread reads a disjoint part of the weights and
// writes disjoint outputs: the result does not depend on the thread count.
//
// Between calls a worker polls for the next one for `spin_us`, then sleeps
// on a condition variable, and the caller waiting for the last worker does
// the same: consecutive calls (an expert's gate/up and down phases, a
// layer's experts one after another) find the workers awake, without the
// wake-up of a sleeping thread (tens of us on a VM), and an idle pool gives
// its cores back within spin_us. spin_us = 0 sleeps at once.

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
  // `threads` >= 1 counts the caller: threads - 1 workers are started. A
  // thread the system refuses to start is a moebench::Error (the ones
  // started are joined first).
  explicit ThreadPool(int threads, int spin_us = kDefaultSpinUs);
  static constexpr int kDefaultSpinUs = 200;
  ~ThreadPool();
  ThreadPool(const ThreadPool&) = delete;
  ThreadPool& operator=(const ThreadPool&) = delete;

  int threads() const { return int(workers_.size()) + 1; }
  int spin_us() const { return spin_us_; }
  // Runs f(0) .. f(n-1) across the threads; returns when all are done. An
  // exception thrown by a task is rethrown here (the first one; the other
  // tasks still run). Not reentrant: f must not call parallel_for.
  void parallel_for(int64_t n, const std::function<void(int64_t)>& f);

 private:
  void work();
  void drain();
  void stop();  // stops and joins the workers
  // Polls ready() for up to spin_us_; whether it became true.
  template <class Ready>
  bool spin(Ready&& ready) const;

  const int spin_us_;
  std::vector<std::thread> workers_;
  std::mutex mu_;
  std::condition_variable start_cv_, done_cv_;
  // job_ and n_ are written before generation_ is (release) and read after
  // a worker sees it change (acquire).
  const std::function<void(int64_t)>* job_ = nullptr;
  int64_t n_ = 0;
  std::atomic<int64_t> next_{0};
  std::atomic<int64_t> generation_{0};
  std::atomic<int> active_{0};  // workers still inside the current call
  std::atomic<bool> stop_{false};
  std::exception_ptr error_;  // under mu_
};

// The median round trip, in us, of a call of `threads` empty tasks on a
// pool of `threads` threads (calls back to back, and after every 20th a
// pause of 200 us, within the poll): what handing an expert's tasks to the
// pool costs beside the kernel. `moebench probe` and `moebench calibrate`
// report it as task_overhead_us.
double pool_dispatch_us(int threads, int calls = 201);

// Splits [0, n) into chunks of `grain` (the last may be shorter) and runs
// f(begin, end) for each on `pool`, or inline on the caller when pool is null.
void parallel_ranges(ThreadPool* pool, int64_t n, int64_t grain,
                     const std::function<void(int64_t, int64_t)>& f);

}  // namespace moebench
