#include <gtest/gtest.h>

#include <atomic>
#include <vector>

#include "core/thread_pool.h"

namespace oscar {
namespace {

TEST(ThreadPool, RunsEveryThreadOncePerCall) {
  ThreadPool pool(4);
  for (int rep = 0; rep < 200; ++rep) {
    std::vector<std::atomic<int>> hits(4);
    pool.run([&](int t, int n) {
      ASSERT_EQ(n, 4);
      hits[t]++;
    });
    for (auto& h : hits) ASSERT_EQ(h.load(), 1);
  }
}

TEST(ThreadPool, ParallelForCoversRangeExactlyOnce) {
  ThreadPool pool(3);
  for (size_t n : {0, 1, 2, 5, 17, 1000}) {
    std::vector<std::atomic<int>> seen(n);
    pool.parallel_for(n, 1, [&](size_t b, size_t e) {
      for (size_t i = b; i < e; ++i) seen[i]++;
    });
    for (size_t i = 0; i < n; ++i) EXPECT_EQ(seen[i].load(), 1) << "n=" << n << " i=" << i;
  }
}

TEST(ThreadPool, WorkerExceptionPropagatesToTheCaller) {
  ThreadPool pool(3);
  std::atomic<int> done{0};
  EXPECT_THROW(pool.run([&](int t, int) {
    if (t == 2) throw std::runtime_error("worker");
    done++;
  }),
               std::runtime_error);
  EXPECT_EQ(done.load(), 2);
  pool.run([&](int, int) { done++; });  // still usable, error not re-raised
  EXPECT_EQ(done.load(), 5);
}

TEST(ThreadPool, ManyTinyTasksInARow) {
  ThreadPool pool(4);
  std::atomic<long> sum{0};
  for (int rep = 0; rep < 5000; ++rep) pool.run([&](int t, int) { sum += t; });
  EXPECT_EQ(sum.load(), 5000L * (0 + 1 + 2 + 3));
}

TEST(ThreadPool, CallerExceptionPropagatesAfterWorkersFinish) {
  ThreadPool pool(2);
  std::atomic<int> done{0};
  EXPECT_THROW(pool.run([&](int t, int) {
    if (t == 0) throw std::runtime_error("boom");
    done++;
  }),
               std::runtime_error);
  EXPECT_EQ(done.load(), 1);
  // The pool is still usable.
  pool.run([&](int, int) { done++; });
  EXPECT_EQ(done.load(), 3);
}

}  // namespace
}  // namespace oscar
