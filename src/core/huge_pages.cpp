#include "core/huge_pages.h"

#include <sys/mman.h>

#include <cstring>
#include <new>
#include <utility>

namespace oscar {

HugePageBuffer HugePageBuffer::allocate(size_t bytes) {
  HugePageBuffer b;
  if (bytes == 0) return b;
#if defined(__SANITIZE_ADDRESS__)
  // Heap memory, so that AddressSanitizer sees reads past the end (a mapping
  // rounded up to huge pages would hide them); region_size_ 0 marks it.
  void* h = ::operator new(bytes, std::align_val_t(kHugePageBytes), std::nothrow);
  if (!h) return b;
  std::memset(h, 0, bytes);
  b.region_ = h;
  b.data_ = static_cast<uint8_t*>(h);
  b.size_ = bytes;
  return b;
#else
  // The data starts on a huge-page boundary and its end is rounded up to one,
  // so that its last part can be a huge page too; the slack is never touched
  // and costs only address space.
  const size_t rounded = (bytes + kHugePageBytes - 1) & ~(kHugePageBytes - 1);
  const size_t region = rounded + kHugePageBytes;
  void* r = ::mmap(nullptr, region, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (r == MAP_FAILED) return b;
  auto* aligned = reinterpret_cast<uint8_t*>((reinterpret_cast<uintptr_t>(r) + kHugePageBytes - 1) &
                                             ~uintptr_t(kHugePageBytes - 1));
#if defined(MADV_HUGEPAGE)
  ::madvise(aligned, rounded, MADV_HUGEPAGE);  // advisory: fine where THP is off
#endif  // elsewhere (macOS) the OS picks page sizes itself
  b.region_ = r;
  b.region_size_ = region;
  b.data_ = aligned;
  b.size_ = bytes;
  return b;
#endif
}

HugePageBuffer::~HugePageBuffer() { release(); }

HugePageBuffer::HugePageBuffer(HugePageBuffer&& o) noexcept
    : data_(std::exchange(o.data_, nullptr)),
      size_(std::exchange(o.size_, 0)),
      region_(std::exchange(o.region_, nullptr)),
      region_size_(std::exchange(o.region_size_, 0)) {}

HugePageBuffer& HugePageBuffer::operator=(HugePageBuffer&& o) noexcept {
  if (this != &o) {
    release();
    data_ = std::exchange(o.data_, nullptr);
    size_ = std::exchange(o.size_, 0);
    region_ = std::exchange(o.region_, nullptr);
    region_size_ = std::exchange(o.region_size_, 0);
  }
  return *this;
}

void HugePageBuffer::make_read_only() {
  if (region_ && region_size_ > 0) ::mprotect(region_, region_size_, PROT_READ);
}

void HugePageBuffer::make_writable() {
  if (region_ && region_size_ > 0) ::mprotect(region_, region_size_, PROT_READ | PROT_WRITE);
}

void HugePageBuffer::commit() {
  // One write per 4 KiB page: a huge page faults in at its first, and the
  // rest are plain stores. The value written is the one already there.
  constexpr size_t kSmallPage = 4096;
  volatile uint8_t* p = data_;
  for (size_t off = 0; off < size_; off += kSmallPage) p[off] = 0;
}

void HugePageBuffer::discard() {
  if (region_ && region_size_ > 0) ::madvise(region_, region_size_, MADV_DONTNEED);
  else if (data_) std::memset(data_, 0, size_);  // the heap fallback: zeros too, so both behave alike
}

void HugePageBuffer::release() {
  if (region_ && region_size_ > 0) ::munmap(region_, region_size_);
  else if (region_) ::operator delete(region_, std::align_val_t(kHugePageBytes));
  region_ = nullptr;
  data_ = nullptr;
  size_ = region_size_ = 0;
}

}  // namespace oscar
