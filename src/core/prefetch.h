// Software prefetch of a byte range, for kernels that stream data from memory
// faster than the hardware prefetchers run ahead of them.
#pragma once

#include <cstddef>
#include <cstdint>

namespace oscar {

// Asks for every 64-byte line of [p, p + bytes) to be brought into cache. The
// range may lie past the end of the data: prefetching any address is
// harmless.
inline void prefetch_lines(const void* p, size_t bytes) {
  const auto a = reinterpret_cast<uintptr_t>(p);
  for (size_t o = 0; o < bytes; o += 64) {
    __builtin_prefetch(reinterpret_cast<const void*>(a + o));
    asm volatile("");  // GCC 12 deletes an inlined loop of nothing but prefetches
  }
}

}  // namespace oscar
