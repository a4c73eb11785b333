// A minimal, validating reader for the zip container torch.save writes.
//
// torch.save (the default "zip" serialization since torch 1.6) writes an
// uncompressed (STORED) zip whose entries all live under one top-level folder:
// <name>/data.pkl, <name>/data/<storage key>, <name>/version, ... . Sizes in the
// local headers are often zero (bit 3, "data descriptor", is set), so the
// central directory is the source of truth; zip64 records appear once the
// archive or an entry passes 4 GiB. We read only what that layout needs and
// check every offset and size against the buffer: a bad archive throws
// oscar::Error with one line, never reads out of bounds.
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

namespace oscar::torchio {

struct ZipEntry {
  std::string name;
  uint16_t method = 0;      // 0 = STORED; anything else is refused on access
  uint16_t flags = 0;
  uint32_t crc32 = 0;
  uint64_t size = 0;        // uncompressed (== stored) size
  uint64_t comp_size = 0;
  uint64_t local_offset = 0;  // offset of the local file header
};

class ZipArchive {
 public:
  // Parses the central directory of `bytes` (which must outlive the archive).
  // `name` is used in error messages.
  static ZipArchive parse(std::span<const uint8_t> bytes, const std::string& name);

  const std::vector<ZipEntry>& entries() const { return entries_; }
  const ZipEntry* find(std::string_view name) const;
  // The stored bytes of `e`, after checking its local header, that it is
  // STORED and unencrypted, and that its CRC-32 matches.
  std::span<const uint8_t> data(const ZipEntry& e) const;
  const std::string& name() const { return name_; }

 private:
  std::span<const uint8_t> bytes_;
  std::string name_;
  std::vector<ZipEntry> entries_;
  std::unordered_map<std::string, size_t> index_;
};

// CRC-32 (IEEE, as zip uses), exposed for tests that build archives.
uint32_t crc32(std::span<const uint8_t> data, uint32_t crc = 0);

}  // namespace oscar::torchio
