// How the row tiles of a matrix product are spread over the thread pool
// (matmul.cpp). Header-only so the tile body inlines; tested on its own in
// tests/kernels/test_tile_schedule.cpp.
#pragma once

#include <algorithm>
#include <atomic>
#include <cstdint>
#include <exception>
#include <functional>

#include "core/thread_pool.h"

namespace oscar::kernels {

// Work that follows a product's tiles in the same parallel region, once all
// of them are done: tail(thread, n_threads) on every thread, each taking its
// share. A decode step then posts one region fewer per use, and small
// per-head or per-value steps (Q/K norms and RoPE, SwiGLU) are spread over
// the threads instead of being left to the caller while the others wait.
// It runs inside a pool task, so it must not use the pool itself.
using RegionTail = std::function<void(int, int)>;

// Runs a tail as a region of its own (where the tiles did not run on the pool).
inline void run_tail(ThreadPool& pool, const RegionTail& tail) {
  if (pool.size() == 1) tail(0, 1);
  else pool.run(tail);
}

// Calls tile(t) for every t < n_tiles on the pool. Tiles are handed out
// from a shared counter in chunks of about n_tiles / (chunks_per_thread *
// threads) tiles.
template <class Tile>
void for_each_tile(ThreadPool& pool, int64_t n_tiles, int64_t chunks_per_thread, const Tile& tile) {
  const int64_t chunk = std::max<int64_t>(1, n_tiles / (chunks_per_thread * (int64_t)pool.size()));
  std::atomic<int64_t> next{0};
  auto work = [&](int, int) {
    for (;;) {
      const int64_t tb = next.fetch_add(chunk, std::memory_order_relaxed);
      if (tb >= n_tiles) return;
      const int64_t te = std::min(n_tiles, tb + chunk);
      for (int64_t t = tb; t < te; ++t) tile(t);
    }
  };
  if (n_tiles <= 1) work(0, 1);
  else pool.run(work);
}

// GEMV variant, which keeps each thread's rows one unbroken stream: thread i
// owns the i-th contiguous range of tiles and walks it forward a few tiles
// per claim. A thread whose range is done moves the back half of the range
// with the most left into its own (all of it when little is left) and walks
// that: one new stream per steal. Each range is one atomic word
// (next << 32 | end): the owner moves next up, a thief moves end down, and a
// compare-and-swap keeps them from crossing.
// Against 2 shared-counter chunks per thread, `decode_gemvs` t2 read 6% more
// GB/s (median of 8 alternating pairs; docs/decisions/0010-gemv-streams-and-roofline-probe.md).
// With a tail, every thread runs it after the last tile of all threads.
template <class Tile>
void for_each_tile_streams(ThreadPool& pool, int64_t n_tiles, const Tile& tile, const RegionTail* tail = nullptr) {
  constexpr int kMaxThreads = 64;
  // Tiles per claim: a quarter of what is left of the range, between kClaim
  // and kMaxClaim. Each claim is a locked compare-and-swap, which held
  // about 65% of the scheduler's own samples with fixed claims of 4 (perf,
  // qwen3-0.6b decode); the quarter keeps the tail, which a thief cannot
  // take, short.
  constexpr int64_t kClaim = 4, kMaxClaim = 64;
  const int nt = pool.size();
  if (n_tiles <= 1 || nt == 1 || nt > kMaxThreads || n_tiles >= (int64_t{1} << 31)) {
    for_each_tile(pool, n_tiles, 2, tile);
    if (tail) run_tail(pool, *tail);
    return;
  }
  struct alignas(64) Range {
    std::atomic<uint64_t> w;
  };
  Range ranges[kMaxThreads];
  auto pack = [](int64_t a, int64_t b) { return (uint64_t)a << 32 | (uint64_t)b; };
  auto next_of = [](uint64_t w) { return (int64_t)(w >> 32); };
  auto end_of = [](uint64_t w) { return (int64_t)(w & 0xffffffffu); };
  for (int i = 0; i < nt; ++i) ranges[i].w.store(pack(n_tiles * i / nt, n_tiles * (i + 1) / nt));
  // The owner's claim of up to kClaim tiles from the front of its range.
  auto claim = [&](int me, int64_t& tb, int64_t& te) {
    uint64_t cur = ranges[me].w.load(std::memory_order_relaxed);
    for (;;) {
      const int64_t a = next_of(cur), b = end_of(cur);
      if (a >= b) return false;
      tb = a;
      te = a + std::min(b - a, std::clamp((b - a) / 4, kClaim, kMaxClaim));
      if (ranges[me].w.compare_exchange_weak(cur, pack(te, b), std::memory_order_relaxed)) return true;
    }
  };
  // Moves the back half of range r (all of it below 2 claims) into range
  // me, which is empty: nobody else writes an empty range.
  auto steal = [&](int r, int me) {
    uint64_t cur = ranges[r].w.load(std::memory_order_relaxed);
    for (;;) {
      const int64_t a = next_of(cur), b = end_of(cur);
      if (a >= b) return;
      const int64_t mid = b - a < 2 * kClaim ? a : b - (b - a) / 2;
      if (ranges[r].w.compare_exchange_weak(cur, pack(a, mid), std::memory_order_relaxed)) {
        ranges[me].w.store(pack(mid, b), std::memory_order_relaxed);
        return;
      }
    }
  };
  RegionBarrier all_tiles_done(nt);
  pool.run([&](int me, int) {
    // A thread that failed still meets the others at the barrier, which
    // would otherwise wait for it forever.
    std::exception_ptr failed;
    try {
      int64_t tb, te;
      for (;;) {
        while (claim(me, tb, te))
          for (int64_t t = tb; t < te; ++t) tile(t);
        int victim = -1;
        int64_t most = 0;
        for (int r = 0; r < nt; ++r) {
          const uint64_t cur = ranges[r].w.load(std::memory_order_relaxed);
          if (end_of(cur) - next_of(cur) > most) most = end_of(cur) - next_of(cur), victim = r;
        }
        if (victim < 0) break;
        steal(victim, me);
      }
    } catch (...) {
      failed = std::current_exception();
    }
    if (tail) {
      all_tiles_done.arrive_and_wait();
      if (!failed) (*tail)(me, nt);
    }
    if (failed) std::rethrow_exception(failed);
  });
}

}  // namespace oscar::kernels
