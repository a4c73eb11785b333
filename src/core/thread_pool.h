// One pool of worker threads shared by every kernel of a process. The owner
// (a tool's main, the server) creates it with the thread count from its
// settings and passes it down; nothing creates threads behind its back.
//
// A decode step hands the pool a few hundred small tasks, so hand-off latency
// matters: workers spin briefly on an atomic generation counter before
// sleeping on a condition variable, and the caller spins for completion.
#pragma once

#include <atomic>
#include <condition_variable>
#include <cstddef>
#include <cstdint>
#include <exception>
#include <functional>
#include <mutex>
#include <thread>
#include <vector>

namespace oscar {

class ThreadPool {
 public:
  // n_threads includes the calling thread; 0 means hardware concurrency.
  explicit ThreadPool(int n_threads = 0);
  ~ThreadPool();
  ThreadPool(const ThreadPool&) = delete;
  ThreadPool& operator=(const ThreadPool&) = delete;

  int size() const { return n_threads_; }

  // Runs fn(thread_index, n_threads) on every thread (caller included) and
  // waits for all of them; the first exception thrown by any thread is
  // rethrown here. Not reentrant: a task must not call run() again.
  void run(const std::function<void(int, int)>& fn);

  // Splits [0, n) into contiguous chunks of at least `grain` items, one
  // chunk per thread, and calls fn(begin, end) for each non-empty chunk.
  void parallel_for(size_t n, size_t grain, const std::function<void(size_t, size_t)>& fn);

 private:
  void worker(int index);
  void record(std::exception_ptr e);

  int n_threads_;
  std::vector<std::thread> threads_;
  std::mutex mu_;
  std::condition_variable cv_;
  std::atomic<uint64_t> generation_{0};
  std::atomic<int> pending_{0};
  std::atomic<bool> stop_{false};
  const std::function<void(int, int)>* task_ = nullptr;
  std::mutex err_mu_;
  std::exception_ptr error_;
};

// A meeting point inside one parallel region: each of the region's n threads
// calls arrive_and_wait() once, and none returns before all n have arrived.
// It lets a region run a second step that needs the whole of the first
// (a decode step's per-head norms after its projections) without handing
// the work back to the caller and posting a new region. Single use.
class RegionBarrier {
 public:
  explicit RegionBarrier(int n) : left_(n) {}
  void arrive_and_wait();

 private:
  alignas(64) std::atomic<int> left_;
};

}  // namespace oscar
