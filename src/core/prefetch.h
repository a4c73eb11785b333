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
//   1.5, 4 and 8 KiB alike (docs/decisions/0006-software-prefetch.md).
// - Attention, f16 K and V at depth 16384: 4 KiB about 10-15% faster than
//   8 KiB (session 11). A 32-row block of f16 d128 rows is 8 KiB per stream,
//   so 8 KiB ahead on both streams kept 32 KiB in flight beside the two blocks
//   in use and evicted rows before they were read.
// - GEMV tiles with the non-temporal hint, 2 threads: 8 and 16 KiB 3-15%
//   slower than 4 (session 19).
// - With the L2 hint (below), session 23's machine: qwen3-0.6b decode at
//   depth 0 58.5-58.7 t/s at 2 KiB against 55.7-56.1 at 4 KiB (1 and 3
//   KiB 57.2-58.1, 8 and 16 KiB 53.1-54.6), and q2_0 decode attention at
//   16K (BM_DecodeAttention, qwen3_4b) 59.3 against 61.5 ms.
constexpr size_t kStreamPrefetchBytes = 2048;

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

// The hint keeps the lines in L2 (prefetcht1). Everything streamed this way
// is read once per decode step, so the non-temporal hint (prefetchnta, into
// L1 only) looked right, and on session 19's machine it was: qwen3-0.6b
// decode at depth 0, 176 against 167 t/s. On session 23's machine it halved
// every stream: qwen3-0.6b decode at depth 0 27.3 against 56.3 t/s (35%
// against 72% of the probe), and qwen3-4b q2_0 decode at depth 16384 2.95
// against 5.98 t/s; the lines were gone from L1 before use whenever
// anything else passed through it. A line in L2 survives that
// (docs/decisions/0006-software-prefetch.md).
inline void prefetch_lines(const void* p, size_t bytes) { prefetch_lines_with<2>(p, bytes); }

// Asks for part [begin, end) of `total` equal parts of [p, p + bytes),
// line by line from its first byte. A kernel spreads a block's prefetches
// over its work with it: asked for in one burst at the start of each block,
// they waited for free fill buffers. The rows16 Q4_K GEMV ran 4-7% faster
// with its super-block spread over its 32 chunks, and f16 decode attention
// at 16K 10-13% faster with the other stream's rows spread over a block's
// rows (docs/decisions/0006-software-prefetch.md).
inline void prefetch_part(const void* p, size_t bytes, size_t begin, size_t end, size_t total) {
  const size_t from = bytes * begin / total, to = bytes * end / total;
  prefetch_lines(static_cast<const uint8_t*>(p) + from, to - from);
}

}  // namespace oscar
