#include "core/thread_pool.h"

#include <algorithm>
#include <exception>

namespace oscar {

ThreadPool::ThreadPool(int n_threads) {
  if (n_threads <= 0) n_threads = (int)std::max(1u, std::thread::hardware_concurrency());
  n_threads_ = n_threads;
  for (int i = 1; i < n_threads_; ++i) threads_.emplace_back([this, i] { worker(i); });
}

ThreadPool::~ThreadPool() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    stop_ = true;
  }
  start_cv_.notify_all();
  for (auto& t : threads_) t.join();
}

void ThreadPool::worker(int index) {
  unsigned long seen = 0;
  for (;;) {
    const std::function<void(int, int)>* task;
    {
      std::unique_lock<std::mutex> lock(mu_);
      start_cv_.wait(lock, [&] { return stop_ || generation_ != seen; });
      if (stop_) return;
      seen = generation_;
      task = task_;
    }
    (*task)(index, n_threads_);
    {
      std::lock_guard<std::mutex> lock(mu_);
      if (--pending_ == 0) done_cv_.notify_one();
    }
  }
}

void ThreadPool::run(const std::function<void(int, int)>& fn) {
  if (n_threads_ == 1) {
    fn(0, 1);
    return;
  }
  {
    std::lock_guard<std::mutex> lock(mu_);
    task_ = &fn;
    pending_ = n_threads_ - 1;
    ++generation_;
  }
  start_cv_.notify_all();
  std::exception_ptr err;
  try {
    fn(0, n_threads_);
  } catch (...) {
    err = std::current_exception();
  }
  std::unique_lock<std::mutex> lock(mu_);
  done_cv_.wait(lock, [&] { return pending_ == 0; });
  task_ = nullptr;
  if (err) std::rethrow_exception(err);
}

void ThreadPool::parallel_for(size_t n, size_t grain,
                              const std::function<void(size_t, size_t)>& fn) {
  if (n == 0) return;
  grain = std::max<size_t>(grain, 1);
  const size_t max_chunks = (n + grain - 1) / grain;
  const size_t chunks = std::min<size_t>((size_t)n_threads_, max_chunks);
  if (chunks <= 1) {
    fn(0, n);
    return;
  }
  run([&](int t, int) {
    if ((size_t)t >= chunks) return;
    const size_t begin = n * (size_t)t / chunks;
    const size_t end = n * ((size_t)t + 1) / chunks;
    if (begin < end) fn(begin, end);
  });
}

}  // namespace oscar
