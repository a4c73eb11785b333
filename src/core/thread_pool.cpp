#include "core/thread_pool.h"

#include <algorithm>

#if defined(__x86_64__)
#include <immintrin.h>
#endif

namespace oscar {

namespace {
inline void cpu_relax() {
#if defined(__x86_64__)
  _mm_pause();
#elif defined(__aarch64__)
  asm volatile("yield");
#endif
}
// Spins before a worker sleeps: long enough to bridge the gap between the
// matmuls of one decode step, short enough not to burn a core when idle.
// Past kPureSpins a waiting thread yields each round, so an oversubscribed
// machine still makes progress.
constexpr int kWorkerSpins = 4000;
constexpr int kPureSpins = 1000;
}  // namespace

ThreadPool::ThreadPool(int n_threads) {
  if (n_threads <= 0) n_threads = (int)std::max(1u, std::thread::hardware_concurrency());
  n_threads_ = n_threads;
  for (int i = 1; i < n_threads_; ++i) threads_.emplace_back([this, i] { worker(i); });
}

ThreadPool::~ThreadPool() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    stop_.store(true);
  }
  cv_.notify_all();
  for (auto& t : threads_) t.join();
}

void ThreadPool::record(std::exception_ptr e) {
  std::lock_guard<std::mutex> lock(err_mu_);
  if (!error_) error_ = e;
}

void ThreadPool::worker(int index) {
  uint64_t seen = 0;
  for (;;) {
    uint64_t g = generation_.load(std::memory_order_acquire);
    for (int i = 0; i < kWorkerSpins && g == seen && !stop_.load(std::memory_order_relaxed); ++i) {
      if (i < kPureSpins) cpu_relax();
      else std::this_thread::yield();
      g = generation_.load(std::memory_order_acquire);
    }
    if (g == seen) {
      std::unique_lock<std::mutex> lock(mu_);
      cv_.wait(lock, [&] { return stop_.load() || generation_.load() != seen; });
      g = generation_.load(std::memory_order_acquire);
    }
    if (stop_.load()) return;
    seen = g;
    try {
      (*task_)(index, n_threads_);
    } catch (...) {
      record(std::current_exception());
    }
    pending_.fetch_sub(1, std::memory_order_acq_rel);
  }
}

void ThreadPool::run(const std::function<void(int, int)>& fn) {
  if (n_threads_ == 1) {
    fn(0, 1);
    return;
  }
  task_ = &fn;
  pending_.store(n_threads_ - 1, std::memory_order_relaxed);
  {
    // Under the lock so a worker about to sleep cannot miss the new generation.
    std::lock_guard<std::mutex> lock(mu_);
    generation_.fetch_add(1, std::memory_order_release);
  }
  cv_.notify_all();
  try {
    fn(0, n_threads_);
  } catch (...) {
    record(std::current_exception());
  }
  for (long i = 0; pending_.load(std::memory_order_acquire) != 0; ++i) {
    if (i < kPureSpins) cpu_relax();
    else std::this_thread::yield();
  }
  task_ = nullptr;
  std::exception_ptr err;
  {
    std::lock_guard<std::mutex> lock(err_mu_);
    std::swap(err, error_);
  }
  if (err) std::rethrow_exception(err);
}

void RegionBarrier::arrive_and_wait() {
  left_.fetch_sub(1, std::memory_order_acq_rel);
  for (long i = 0; left_.load(std::memory_order_acquire) > 0; ++i) {
    if (i < kPureSpins) cpu_relax();
    else std::this_thread::yield();
  }
}

void ThreadPool::parallel_for(size_t n, size_t grain, const std::function<void(size_t, size_t)>& fn) {
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
