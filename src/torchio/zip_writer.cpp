#include "torchio/zip_writer.h"

#include <limits>

#include "core/error.h"
#include "torchio/zip_reader.h"

namespace oscar::torchio {

namespace {

constexpr size_t kAlign = 64;                 // torch's storage alignment
constexpr uint16_t kPadFieldId = 0x4246;      // "FB", the id torch uses for padding
constexpr uint64_t kMax32 = std::numeric_limits<uint32_t>::max();

void put16(std::vector<uint8_t>& b, uint32_t v) {
  b.push_back((uint8_t)(v & 0xff));
  b.push_back((uint8_t)((v >> 8) & 0xff));
}
void put32(std::vector<uint8_t>& b, uint32_t v) {
  put16(b, v & 0xffff);
  put16(b, v >> 16);
}

}  // namespace

void ZipWriter::add(const std::string& name, std::span<const uint8_t> data) {
  require(!finished_, "zip writer: add() after finish()");
  require(!name.empty() && name.size() < 0xffff, "zip writer: bad entry name '" + name + "'");
  require(central_.size() < 0xfffe, "zip writer: too many entries (this writer has no zip64 support)");
  const uint64_t offset = out_.size();
  const uint64_t base = offset + 30 + name.size();
  // An extra field costs 4 header bytes, so pad (4 + p) bytes when unaligned.
  size_t extra = 0;
  if (base % kAlign) extra = 4 + (kAlign - (base + 4) % kAlign) % kAlign;
  require(base + extra + data.size() < kMax32, "zip writer: archive past 4 GiB (this writer has no zip64 support)");
  const uint32_t crc = crc32(data);
  put32(out_, 0x04034b50);
  put16(out_, 20);  // version needed: 2.0
  put16(out_, 0);   // flags: sizes are known, no data descriptor
  put16(out_, 0);   // STORED
  put16(out_, 0);   // time
  put16(out_, 0x21);  // date: 1980-01-01
  put32(out_, crc);
  put32(out_, (uint32_t)data.size());
  put32(out_, (uint32_t)data.size());
  put16(out_, (uint32_t)name.size());
  put16(out_, (uint32_t)extra);
  out_.insert(out_.end(), name.begin(), name.end());
  if (extra) {
    put16(out_, kPadFieldId);
    put16(out_, (uint32_t)(extra - 4));
    out_.insert(out_.end(), extra - 4, (uint8_t)'Z');
  }
  out_.insert(out_.end(), data.begin(), data.end());
  central_.push_back({name, crc, (uint32_t)data.size(), (uint32_t)offset});
}

void ZipWriter::add(const std::string& name, const std::string& text) {
  add(name, std::span<const uint8_t>(reinterpret_cast<const uint8_t*>(text.data()), text.size()));
}

std::vector<uint8_t> ZipWriter::finish() {
  require(!finished_, "zip writer: finish() called twice");
  finished_ = true;
  const uint64_t cd_offset = out_.size();
  for (const Central& c : central_) {
    put32(out_, 0x02014b50);
    put16(out_, 20);  // made by
    put16(out_, 20);  // needed
    put16(out_, 0);
    put16(out_, 0);
    put16(out_, 0);
    put16(out_, 0x21);
    put32(out_, c.crc);
    put32(out_, c.size);
    put32(out_, c.size);
    put16(out_, (uint32_t)c.name.size());
    put16(out_, 0);  // extra
    put16(out_, 0);  // comment
    put16(out_, 0);  // disk
    put16(out_, 0);  // internal attributes
    put32(out_, 0);  // external attributes
    put32(out_, c.offset);
    out_.insert(out_.end(), c.name.begin(), c.name.end());
  }
  const uint64_t cd_size = out_.size() - cd_offset;
  require(out_.size() < kMax32, "zip writer: archive past 4 GiB (this writer has no zip64 support)");
  put32(out_, 0x06054b50);
  put16(out_, 0);
  put16(out_, 0);
  put16(out_, (uint32_t)central_.size());
  put16(out_, (uint32_t)central_.size());
  put32(out_, (uint32_t)cd_size);
  put32(out_, (uint32_t)cd_offset);
  put16(out_, 0);
  return std::move(out_);
}

}  // namespace oscar::torchio
