// The row-tile schedulers of the matrix products (kernels/tile_schedule.h):
// every tile runs exactly once for any pool size and tile count, also when
// one thread is much slower than the others (the stream scheduler's steals),
// and the stream scheduler walks its ranges forward.
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <map>
#include <memory>
#include <mutex>
#include <stdexcept>
#include <thread>
#include <vector>

#include "kernels/tile_schedule.h"

namespace oscar::kernels {
namespace {

struct Counts {
  std::unique_ptr<std::atomic<int>[]> c;
  explicit Counts(int64_t n) : c(new std::atomic<int>[(size_t)std::max<int64_t>(n, 1)]) {
    for (int64_t i = 0; i < n; ++i) c[(size_t)i] = 0;
  }
  void expect_once(int64_t n, const char* what, int threads) const {
    for (int64_t i = 0; i < n; ++i) ASSERT_EQ(c[(size_t)i].load(), 1) << what << " tile " << i << " of " << n << ", " << threads << " threads";
  }
};

const int64_t kTileCounts[] = {0, 1, 2, 3, 5, 8, 63, 64, 65, 1000, 4097};

TEST(TileSchedule, EveryTileOnceWithTheCounter) {
  for (int threads : {1, 2, 3, 4, 8}) {
    ThreadPool pool(threads);
    for (int64_t n : kTileCounts) {
      Counts k(n);
      for_each_tile(pool, n, 2, [&](int64_t t) { k.c[(size_t)t]++; });
      k.expect_once(n, "counter", threads);
    }
  }
}

TEST(TileSchedule, EveryTileOnceWithStreams) {
  for (int threads : {1, 2, 3, 4, 8}) {
    ThreadPool pool(threads);
    for (int64_t n : kTileCounts) {
      Counts k(n);
      for_each_tile_streams(pool, n, [&](int64_t t) { k.c[(size_t)t]++; });
      k.expect_once(n, "streams", threads);
    }
  }
}

// The thread that takes tile 0 (the first range's owner) sleeps on each of
// its tiles (0.5 ms, long enough for the others to be scheduled even on a
// loaded machine), so the others finish and steal most of its range.
TEST(TileSchedule, StreamsStealFromASlowThread) {
  for (int threads : {2, 4}) {
    ThreadPool pool(threads);
    const int64_t n = 400;
    Counts k(n);
    std::atomic<std::thread::id> slow{};
    std::vector<std::atomic<int>> by_slow((size_t)n);
    for (auto& b : by_slow) b = 0;
    for_each_tile_streams(pool, n, [&](int64_t t) {
      if (t == 0) slow = std::this_thread::get_id();
      if (slow.load() == std::this_thread::get_id()) {
        by_slow[(size_t)t] = 1;
        std::this_thread::sleep_for(std::chrono::microseconds(500));
      }
      k.c[(size_t)t]++;
    });
    k.expect_once(n, "streams, slow thread", threads);
    int slow_tiles = 0;
    for (auto& b : by_slow) slow_tiles += b.load();
    // Its own range is n / threads tiles; the others must have taken part of it.
    EXPECT_LT(slow_tiles, n / threads) << threads << " threads";
  }
}

// Each thread walks forward through whole stretches of rows (one memory
// stream per stretch): its tiles form a few ascending runs, one per range it
// owned or took over, never one run per claim.
TEST(TileSchedule, StreamsWalkForwardInLongRuns) {
  for (int threads : {2, 4}) {
    ThreadPool pool(threads);
    const int64_t n = 4096;
    std::mutex mu;
    std::map<std::thread::id, std::vector<int64_t>> seen;
    for_each_tile_streams(pool, n, [&](int64_t t) {
      std::lock_guard<std::mutex> lock(mu);
      seen[std::this_thread::get_id()].push_back(t);
    });
    size_t total = 0;
    for (const auto& [id, ts] : seen) {
      total += ts.size();
      int runs = 1;
      for (size_t i = 1; i < ts.size(); ++i) runs += ts[i] < ts[i - 1];
      // A steal halves what is left of a range, so even a thread that runs
      // alone steals at most about log2(n / 4) times per range, while a walk
      // that restarted at every claim of 4 tiles would make n / 4 runs.
      EXPECT_LE(runs, threads * 11 + 4) << threads << " threads";
    }
    EXPECT_EQ(total, (size_t)n);
  }
}

// A tail runs once on every thread of the pool, and only after the last
// tile of every thread: each thread's tail sees all tiles counted. Also where
// the scheduler falls back to the counter (no tiles, one tile, one thread).
TEST(TileSchedule, TailRunsOnEveryThreadAfterAllTiles) {
  for (int threads : {1, 2, 3, 4, 8}) {
    ThreadPool pool(threads);
    for (int64_t n : kTileCounts) {
      Counts k(n);
      std::atomic<int64_t> done{0};
      std::vector<std::atomic<int>> tails((size_t)threads);
      for (auto& t : tails) t = 0;
      std::atomic<int> early{0}, wrong_count{0};
      const RegionTail tail = [&](int t, int nt) {
        if (nt != threads) wrong_count++;
        if (done.load() != n) early++;
        tails[(size_t)t]++;
      };
      for_each_tile_streams(pool, n, [&](int64_t t) {
        // Slow tiles, so a tail that did not wait would see them unfinished.
        if (t % 7 == 0) std::this_thread::sleep_for(std::chrono::microseconds(50));
        k.c[(size_t)t]++;
        done++;
      }, &tail);
      k.expect_once(n, "streams with a tail", threads);
      EXPECT_EQ(early.load(), 0) << n << " tiles, " << threads << " threads";
      EXPECT_EQ(wrong_count.load(), 0) << n << " tiles, " << threads << " threads";
      for (int t = 0; t < threads; ++t) EXPECT_EQ(tails[(size_t)t].load(), 1) << "thread " << t << " of " << threads;
    }
  }
}

// A tile that throws reaches the caller, and the other threads are not left
// waiting at the tail's barrier.
TEST(TileSchedule, FailingTileWithATailDoesNotHang) {
  for (int threads : {2, 4}) {
    ThreadPool pool(threads);
    std::atomic<int> tails{0};
    const RegionTail tail = [&](int, int) { tails++; };
    EXPECT_THROW(for_each_tile_streams(pool, 64, [&](int64_t t) {
      if (t == 5) throw std::runtime_error("tile 5");
    }, &tail), std::runtime_error);
    // The throwing thread skips its tail; the others still run theirs.
    EXPECT_EQ(tails.load(), threads - 1);
  }
}

// The barrier holds every thread of a region until all have arrived.
TEST(RegionBarrier, NoThreadPassesBeforeAllArrive) {
  for (int threads : {2, 3, 8}) {
    ThreadPool pool(threads);
    for (int round = 0; round < 50; ++round) {
      RegionBarrier barrier(threads);
      std::atomic<int> arrived{0}, early{0};
      pool.run([&](int t, int) {
        if (t == round % threads) std::this_thread::sleep_for(std::chrono::microseconds(20));
        arrived++;
        barrier.arrive_and_wait();
        if (arrived.load() != threads) early++;
      });
      ASSERT_EQ(early.load(), 0) << threads << " threads, round " << round;
    }
  }
}

}  // namespace
}  // namespace oscar::kernels
