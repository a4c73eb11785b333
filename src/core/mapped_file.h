// A read-only view of a whole file in memory, either mapped or loaded.
//
// Mapped (mmap) costs no copy and shares pages with the page cache, but the
// page cache uses 4 KiB pages: streaming weights through them in a decode
// step takes a TLB miss every 4 KiB and stops the hardware prefetchers at
// every page boundary. On the development VM that held qwen3-0.6b decode at
// 25% of the read bandwidth on one thread. Loaded copies the file into
// anonymous memory aligned to 2 MiB and asks for transparent huge pages
// (madvise), which took the same decode to 85-91%
// (docs/decisions/0009-huge-pages.md). The copy costs one read of the file at start-up.
#pragma once

#include <time.h>

#include <cstddef>
#include <cstdint>
#include <functional>
#include <span>
#include <string>

#include "core/huge_pages.h"

namespace oscar {

enum class FileResidence {
  kMapped,  // mmap of the file
  kLoaded,  // read into anonymous memory with huge pages requested
};

// Whether a loaded copy of `file_bytes` leaves at least 1 GiB of the
// `available_bytes` the kernel reports (MemAvailable) for the KV cache and
// the rest. A model that does not fit is mapped instead: the kernel can then
// page its weights in and out, where a copy would end in the OOM killer.
bool loaded_copy_fits(size_t file_bytes, size_t available_bytes);

class MappedFile {
 public:
  MappedFile() = default;
  // Maps or loads `path` read-only; throws Error naming the path and the OS
  // reason. When a copy for kLoaded does not fit in the available memory or
  // cannot be allocated, the file is mapped instead (residence() tells which).
  explicit MappedFile(const std::string& path, FileResidence how = FileResidence::kMapped);
  ~MappedFile();
  MappedFile(MappedFile&& o) noexcept;
  MappedFile& operator=(MappedFile&& o) noexcept;
  MappedFile(const MappedFile&) = delete;
  MappedFile& operator=(const MappedFile&) = delete;

  const uint8_t* data() const { return data_; }
  size_t size() const { return size_; }
  std::span<const uint8_t> bytes() const { return {data_, size_}; }
  const std::string& path() const { return path_; }
  FileResidence residence() const { return residence_; }
  // Gives the memory holding the file back to the system, keeping its
  // address: a mapping's pages come back from the file on the next read; a
  // loaded copy reads as zeros until reload(). (oscar-server's sleep.)
  void drop_resident();
  // After drop_resident(), a loaded copy is read again from the file, which
  // must have the size and modification time it had when first read (Error
  // otherwise, naming the path); its edits (edit_loaded) are the caller's to
  // redo. Nothing to do for a mapping.
  void reload();
  // For a loaded file only: unseals the copy, lets `edit` rewrite bytes in
  // place (it gets data() made writable) and seals it again. Returns false,
  // calling nothing, when the file is mapped: a mapping is never written.
  bool edit_loaded(const std::function<void(uint8_t*)>& edit);

 private:
  // Reads the open file into 2 MiB-aligned anonymous memory; false when that
  // memory cannot be had. Throws Error when the read fails.
  bool load_copy(int fd);
  void release();
  const uint8_t* data_ = nullptr;
  size_t size_ = 0;
  struct timespec mtime_ {};  // when the loaded copy was read: reload() checks the file is the same
  HugePageBuffer copy_;  // the memory of a loaded file
  FileResidence residence_ = FileResidence::kMapped;
  std::string path_;
};

}  // namespace oscar
