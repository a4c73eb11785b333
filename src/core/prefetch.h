// Software prefetch of a byte range, for kernels that stream data from memory
// faster than the hardware prefetchers run ahead of them.
#pragma once

#include <cstddef>
#include <cstdint>

namespace oscar {

// How far ahead of the data in use a streaming kernel prefetches: the k-quant
// GEMV tiles (their weight rows), the attention row kernels (cached K and V
// rows) and the bandwidth probe that stands for them. One distance for all,
// because they share the core's fill buffers and L1 (48 KiB here) and each
// measured best at or near it:
// - GEMV tiles, qwen3-0.6b decode, 2 threads: 5-12% faster than without;
//   1.5, 4 and 8 KiB alike (bench/RESULTS.md, session 10).
// - Attention, f16 K and V at depth 16384: 4 KiB about 10-15% faster than
//   8 KiB (session 11). A 32-row block of f16 d128 rows is 8 KiB per stream,
//   so 8 KiB ahead on both streams kept 32 KiB in flight beside the two blocks
//   in use and evicted rows before they were read.
// - GEMV tiles with the non-temporal hint, 2 threads: 8 and 16 KiB 3-15%
//   slower than 4 (session 19).
constexpr size_t kStreamPrefetchBytes = 4096;

// Asks for every 64-byte line of [p, p + bytes) to be brought into cache,
// with __builtin_prefetch's locality hint. The range may lie past the end of
// the data: prefetching any address is harmless.
template <int kLocality>
inline void prefetch_lines_with(const void* p, size_t bytes) {
  const auto a = reinterpret_cast<uintptr_t>(p);
  for (size_t o = 0; o < bytes; o += 64) {
    __builtin_prefetch(reinterpret_cast<const void*>(a + o), /*rw=*/0, kLocality);
    asm volatile("");  // GCC 12 deletes an inlined loop of nothing but prefetches
  }
}

// The hint for streams is non-temporal (prefetchnta). Everything streamed
// this way (the weights, the cached K and V rows) is read once per decode
// step, and a step reads far more bytes (the whole model) than the caches
// hold; with the default hint every line also went through L2 and displaced
// what stays hot from one layer to the next (activations, scratch).
// qwen3-0.6b decode at depth 0, 2 threads, six alternating runs: median 176
// against 167 t/s, and rdtsc around the pieces of a step put attention and
// the output matrix 10-15% faster. qwen3-4b at depth 0 and 16384 and the
// one-matrix GEMV benchmarks: within noise (bench/RESULTS.md, session 19).
inline void prefetch_lines(const void* p, size_t bytes) { prefetch_lines_with<0>(p, bytes); }

// The hint that keeps the lines in L2 (prefetcht1), for data read after
// other work has passed through L1: a prompt tile fetches its rows two
// blocks ahead, and meanwhile its query, accumulators and decoded block
// cycle through L1, where non-temporal lines would be evicted before use.
inline void prefetch_lines_l2(const void* p, size_t bytes) { prefetch_lines_with<2>(p, bytes); }

}  // namespace oscar
