// Copyright 2026 The moebench authors. SPDX-License-Identifier: Apache-2.0
#include "kernels/cpu/thread_pool.h"

#include <algorithm>
#include <chrono>
#include <system_error>
#include <thread>
#include <vector>

#include <fmt/format.h>

#include "core/util/error.h"

namespace moebench {

ThreadPool::ThreadPool(int threads, int spin_us) : spin_us_(std::max(0, spin_us)) {
  const int workers = std::max(1, threads) - 1;
  workers_.reserve(size_t(workers));
  try {
    for (int i = 0; i < workers; ++i) workers_.emplace_back([this] { work(); });
  } catch (const std::system_error& e) {
    // The threads started so far are stopped and joined (a joinable thread
    // destroyed would end the process), and the failure is the caller's error.
    const size_t started = workers_.size();
    stop();
    throw Error(fmt::format(
        "expected to start {} threads, found that the system refused the {}th ({}); ask for "
        "fewer threads (at most this machine's CPUs)",
        threads, started + 2, e.what()));
  }
}

void ThreadPool::stop() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    stop_.store(true, std::memory_order_release);
  }
  start_cv_.notify_all();
  for (auto& t : workers_) t.join();
  workers_.clear();
}

ThreadPool::~ThreadPool() {
  stop();
}

void ThreadPool::drain() {
  for (;;) {
    const int64_t i = next_.fetch_add(1, std::memory_order_relaxed);
    if (i >= n_) return;
    try {
      (*job_)(i);
    } catch (...) {
      std::lock_guard<std::mutex> lock(mu_);
      if (!error_) error_ = std::current_exception();
    }
  }
}

template <class Ready>
bool ThreadPool::spin(Ready&& ready) const {
  if (spin_us_ == 0) return ready();
  const auto until = std::chrono::steady_clock::now() + std::chrono::microseconds(spin_us_);
  for (;;) {
    for (int i = 0; i < 64; ++i) {
      if (ready()) return true;
#if defined(__x86_64__) || defined(__i386__)
      __builtin_ia32_pause();
#endif
    }
    if (std::chrono::steady_clock::now() >= until) return ready();
  }
}

void ThreadPool::work() {
  int64_t seen = 0;
  for (;;) {
    // The caller starts a call only when every worker has left the last
    // one (active_ == 0), so each worker sees every generation once.
    auto ready = [&] {
      return stop_.load(std::memory_order_acquire) ||
             generation_.load(std::memory_order_acquire) != seen;
    };
    if (!spin(ready)) {
      std::unique_lock<std::mutex> lock(mu_);
      start_cv_.wait(lock, ready);
    }
    if (stop_.load(std::memory_order_acquire)) return;
    seen = generation_.load(std::memory_order_acquire);
    drain();
    if (active_.fetch_sub(1, std::memory_order_acq_rel) == 1) {
      // Under the lock: the caller tests active_ under it before it sleeps.
      std::lock_guard<std::mutex> lock(mu_);
      done_cv_.notify_one();
    }
  }
}

void ThreadPool::parallel_for(int64_t n, const std::function<void(int64_t)>& f) {
  if (n <= 0) return;
  if (workers_.empty() || n == 1) {
    std::exception_ptr first;
    for (int64_t i = 0; i < n; ++i) {
      try {
        f(i);
      } catch (...) {
        if (!first) first = std::current_exception();
      }
    }
    if (first) std::rethrow_exception(first);
    return;
  }
  {
    std::lock_guard<std::mutex> lock(mu_);
    job_ = &f;
    n_ = n;
    next_.store(0, std::memory_order_relaxed);
    active_.store(int(workers_.size()), std::memory_order_relaxed);
    error_ = nullptr;
    generation_.fetch_add(1, std::memory_order_release);
  }
  start_cv_.notify_all();
  drain();
  auto done = [&] { return active_.load(std::memory_order_acquire) == 0; };
  std::exception_ptr err;
  {
    if (!spin(done)) {
      std::unique_lock<std::mutex> lock(mu_);
      done_cv_.wait(lock, done);
    }
    std::lock_guard<std::mutex> lock(mu_);
    job_ = nullptr;
    err = error_;
    error_ = nullptr;
  }
  if (err) std::rethrow_exception(err);
}

double pool_dispatch_us(int threads, int calls) {
  ThreadPool pool(threads);
  std::vector<double> xs;
  for (int i = 0; i < std::max(1, calls); ++i) {
    const auto t0 = std::chrono::steady_clock::now();
    pool.parallel_for(threads, [](int64_t) {});
    xs.push_back(
        std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now() - t0).count());
    if (i % 20 == 0) std::this_thread::sleep_for(std::chrono::microseconds(200));
  }
  std::nth_element(xs.begin(), xs.begin() + ptrdiff_t(xs.size() / 2), xs.end());
  return xs[xs.size() / 2];
}

void parallel_ranges(ThreadPool* pool, int64_t n, int64_t grain,
                     const std::function<void(int64_t, int64_t)>& f) {
  if (n <= 0) return;
  grain = std::max<int64_t>(1, grain);
  const int64_t chunks = (n + grain - 1) / grain;
  auto body = [&](int64_t c) { f(c * grain, std::min(n, (c + 1) * grain)); };
  if (!pool) {
    for (int64_t c = 0; c < chunks; ++c) body(c);
    return;
  }
  pool->parallel_for(chunks, body);
}

}  // namespace moebench
