// Writing the zip container torch.save produces: STORED (uncompressed)
// entries under one top-level folder, each entry's data aligned to 64 bytes
// through a padding extra field (so a reader may map storages in place).
// The archive is built in memory: rotation checkpoints are a few MB at most.
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <vector>

namespace oscar::torchio {

class ZipWriter {
 public:
  // Appends one entry (name as stored, e.g. "archive/data/0").
  // Throws oscar::Error past the plain (non-zip64) limits: 4 GiB, 65535 entries.
  void add(const std::string& name, std::span<const uint8_t> data);
  void add(const std::string& name, const std::string& text);
  // Appends the central directory and returns the whole archive.
  std::vector<uint8_t> finish();

 private:
  struct Central {
    std::string name;
    uint32_t crc = 0;
    uint32_t size = 0;
    uint32_t offset = 0;
  };
  std::vector<uint8_t> out_;
  std::vector<Central> central_;
  bool finished_ = false;
};

}  // namespace oscar::torchio
