// Anonymous memory that the kernel may back with 2 MiB transparent huge pages.
//
// Streaming reads through 4 KiB pages take a TLB miss every 4 KiB and stop the
// hardware prefetchers at every page boundary. Decode streams the weights and
// the KV cache once per token, so both live in memory like this: the region
// starts on a 2 MiB boundary and is marked MADV_HUGEPAGE (advisory: with THP
// off it is ordinary memory). The memory reads as zeros. Its pages are
// committed when first written, or all at once by commit().
#pragma once

#include <cstddef>
#include <cstdint>

namespace oscar {

inline constexpr size_t kHugePageBytes = size_t(2) << 20;

class HugePageBuffer {
 public:
  HugePageBuffer() = default;
  // An empty buffer (data() == nullptr) when `bytes` is 0 or the memory
  // cannot be mapped.
  static HugePageBuffer allocate(size_t bytes);
  ~HugePageBuffer();
  HugePageBuffer(HugePageBuffer&& o) noexcept;
  HugePageBuffer& operator=(HugePageBuffer&& o) noexcept;
  HugePageBuffer(const HugePageBuffer&) = delete;
  HugePageBuffer& operator=(const HugePageBuffer&) = delete;

  uint8_t* data() const { return data_; }
  size_t size() const { return size_; }
  // No more writes: the pages become read-only.
  void make_read_only();
  // Writable again (make_read_only undone), for an owner that rewrites its
  // contents once and seals them again.
  void make_writable();
  // Commits every page now. A first write to a huge page can cost
  // milliseconds (the kernel may compact memory to find 2 MiB, then zeroes
  // it); a buffer filled a little at a time, like the KV cache during
  // decode, pays that at start-up instead of in the middle of a token.
  void commit();
  // Gives the pages back to the system, keeping the address range: the
  // contents read as zeros afterwards (the sanitizer build's heap fallback
  // is zeroed and keeps its memory). For a server that sleeps when idle.
  void discard();

 private:
  void release();
  uint8_t* data_ = nullptr;  // aligned to kHugePageBytes inside region_
  size_t size_ = 0;
  void* region_ = nullptr;   // the whole mapping
  size_t region_size_ = 0;
};

}  // namespace oscar
