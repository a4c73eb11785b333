#include <gtest/gtest.h>

#include <sys/mman.h>
#include <unistd.h>

#include <cstdint>
#include <utility>
#include <vector>

#include "core/huge_pages.h"

namespace oscar {
namespace {

TEST(HugePageBuffer, IsAlignedZeroedAndWritable) {
  const size_t n = kHugePageBytes * 3 / 2;  // not a whole number of huge pages
  HugePageBuffer b = HugePageBuffer::allocate(n);
  ASSERT_NE(b.data(), nullptr);
  EXPECT_EQ(b.size(), n);
  EXPECT_EQ(reinterpret_cast<uintptr_t>(b.data()) % kHugePageBytes, 0u);
  // Fresh pages read as zeros, and every byte up to size() is usable.
  EXPECT_EQ(b.data()[0], 0);
  EXPECT_EQ(b.data()[n - 1], 0);
  for (size_t i = 0; i < n; i += 4096) b.data()[i] = (uint8_t)(i >> 12);
  b.data()[n - 1] = 0xAB;
  for (size_t i = 0; i < n; i += 4096) ASSERT_EQ(b.data()[i], (uint8_t)(i >> 12)) << i;
  EXPECT_EQ(b.data()[n - 1], 0xAB);
}

// Pages of [p, p + n) the kernel reports resident.
size_t resident_pages(const uint8_t* p, size_t n) {
  const size_t page = (size_t)sysconf(_SC_PAGESIZE);
  std::vector<unsigned char> v((n + page - 1) / page);
  if (mincore(const_cast<uint8_t*>(p), n, v.data()) != 0) return 0;
  size_t r = 0;
  for (unsigned char c : v) r += c & 1;
  return r;
}

TEST(HugePageBuffer, CommitMakesEveryPageResidentAndKeepsTheZeros) {
  const size_t n = kHugePageBytes + 12345;
  HugePageBuffer b = HugePageBuffer::allocate(n);
  ASSERT_NE(b.data(), nullptr);
  const size_t pages = (n + (size_t)sysconf(_SC_PAGESIZE) - 1) / (size_t)sysconf(_SC_PAGESIZE);
#if !defined(__SANITIZE_ADDRESS__)  // there the buffer is heap memory, already written
  EXPECT_LT(resident_pages(b.data(), n), pages);
#endif
  b.commit();
  EXPECT_EQ(resident_pages(b.data(), n), pages);
  for (size_t i = 0; i < n; i += 997) ASSERT_EQ(b.data()[i], 0) << i;
  HugePageBuffer empty;
  empty.commit();  // nothing to do, and no crash
}

TEST(HugePageBuffer, EmptyForZeroBytes) {
  HugePageBuffer b = HugePageBuffer::allocate(0);
  EXPECT_EQ(b.data(), nullptr);
  EXPECT_EQ(b.size(), 0u);
}

TEST(HugePageBuffer, EmptyWhenTheMemoryCannotBeHad) {
#if defined(__SANITIZE_ADDRESS__)
  GTEST_SKIP() << "AddressSanitizer aborts on impossible allocations unless allocator_may_return_null=1";
#endif
  // More address space than x86-64 or AArch64 user space has.
  HugePageBuffer b = HugePageBuffer::allocate(size_t(1) << 62);
  EXPECT_EQ(b.data(), nullptr);
}

TEST(HugePageBuffer, MovesOwnership) {
  HugePageBuffer a = HugePageBuffer::allocate(1000);
  ASSERT_NE(a.data(), nullptr);
  a.data()[999] = 7;
  uint8_t* p = a.data();
  HugePageBuffer b(std::move(a));
  EXPECT_EQ(a.data(), nullptr);
  EXPECT_EQ(b.data(), p);
  EXPECT_EQ(b.data()[999], 7);
  HugePageBuffer c = HugePageBuffer::allocate(10);
  c = std::move(b);  // releases c's own memory
  EXPECT_EQ(c.data(), p);
  EXPECT_EQ(c.size(), 1000u);
  c.make_read_only();
  EXPECT_EQ(c.data()[999], 7);  // still readable
}

}  // namespace
}  // namespace oscar
