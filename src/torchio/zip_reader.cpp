#include "torchio/zip_reader.h"

#include <array>
#include <cstring>

#include "core/error.h"

namespace oscar::torchio {

namespace {

constexpr uint32_t kLocalSig = 0x04034b50;
constexpr uint32_t kCentralSig = 0x02014b50;
constexpr uint32_t kEocdSig = 0x06054b50;
constexpr uint32_t kZip64EocdSig = 0x06064b50;
constexpr uint32_t kZip64LocatorSig = 0x07064b50;
constexpr size_t kEocdSize = 22;
constexpr size_t kCentralSize = 46;
constexpr size_t kLocalSize = 30;

// Little-endian reads at an offset the caller has already bounds-checked.
uint16_t rd16(const uint8_t* p) { return (uint16_t)(p[0] | (p[1] << 8)); }
uint32_t rd32(const uint8_t* p) { return (uint32_t)rd16(p) | ((uint32_t)rd16(p + 2) << 16); }
uint64_t rd64(const uint8_t* p) { return (uint64_t)rd32(p) | ((uint64_t)rd32(p + 4) << 32); }

// True when [off, off+len) lies inside a buffer of `size` bytes (no overflow).
bool fits(uint64_t off, uint64_t len, uint64_t size) { return off <= size && len <= size - off; }

std::string shown(std::string_view s) {
  std::string out;
  for (unsigned char c : s.substr(0, 200)) {
    if (c < 0x20 || c == 0x7f) {
      char buf[8];
      std::snprintf(buf, sizeof buf, "\\x%02x", c);
      out += buf;
    } else {
      out += (char)c;
    }
  }
  if (s.size() > 200) out += "...";
  return out;
}

const std::array<uint32_t, 256>& crc_table() {
  static const std::array<uint32_t, 256> table = [] {
    std::array<uint32_t, 256> t{};
    for (uint32_t i = 0; i < 256; ++i) {
      uint32_t c = i;
      for (int k = 0; k < 8; ++k) c = (c & 1) ? 0xEDB88320u ^ (c >> 1) : c >> 1;
      t[i] = c;
    }
    return t;
  }();
  return table;
}

}  // namespace

uint32_t crc32(std::span<const uint8_t> data, uint32_t crc) {
  const auto& t = crc_table();
  crc = ~crc;
  for (uint8_t b : data) crc = t[(crc ^ b) & 0xff] ^ (crc >> 8);
  return ~crc;
}

namespace {

// The offset of the end-of-central-directory record. It sits in the last
// 22 + 65535 bytes (its comment is at most 65535 bytes): the last signature
// whose record (with its comment) fits in the file.
uint64_t find_eocd(const uint8_t* b, uint64_t size, const std::string& name) {
  if (size < kEocdSize) throw Error(name + ": not a zip archive (" + std::to_string(size) + " bytes, too short)");
  const uint64_t lowest = size > kEocdSize + 0xffff ? size - kEocdSize - 0xffff : 0;
  for (uint64_t pos = size - kEocdSize + 1; pos-- > lowest;)
    if (rd32(b + pos) == kEocdSig && pos + kEocdSize + rd16(b + pos + 20) <= size) return pos;
  if (size >= 4 && rd32(b) == kLocalSig)
    throw Error(name + ": truncated zip archive (no end-of-central-directory record)");
  throw Error(name + ": not a zip archive (no end-of-central-directory record)");
}

// Zip64 extended information in an entry's extra fields [x, x_end): 64-bit
// values for exactly those fields whose 32-bit slot holds the 0xFFFFFFFF
// marker, in this order.
void read_zip64_extra(const uint8_t* x, const uint8_t* x_end, ZipEntry& ent, const std::string& name) {
  while (x_end - x >= 4) {
    const uint16_t id = rd16(x), len = rd16(x + 2);
    if (len > x_end - x - 4) throw Error(name + ": bad extra field in entry '" + shown(ent.name) + "'");
    if (id == 0x0001) {
      const uint8_t* f = x + 4;
      const uint8_t* f_end = f + len;
      auto take = [&](uint64_t& v) {
        if (f_end - f < 8) throw Error(name + ": short zip64 extra field in entry '" + shown(ent.name) + "'");
        v = rd64(f);
        f += 8;
      };
      if (ent.size == 0xffffffffu) take(ent.size);
      if (ent.comp_size == 0xffffffffu) take(ent.comp_size);
      if (ent.local_offset == 0xffffffffu) take(ent.local_offset);
    }
    x += 4 + len;
  }
}

}  // namespace

ZipArchive ZipArchive::parse(std::span<const uint8_t> bytes, const std::string& name) {
  ZipArchive z;
  z.bytes_ = bytes;
  z.name_ = name;
  const uint64_t size = bytes.size();
  const uint8_t* b = bytes.data();
  auto fail = [&](const std::string& msg) -> Error { return Error(name + ": " + msg); };

  const uint64_t eocd = find_eocd(b, size, name);
  const uint8_t* e = b + eocd;
  uint64_t disk = rd16(e + 4), cd_disk = rd16(e + 6);
  uint64_t n_entries = rd16(e + 10);
  uint64_t cd_size = rd32(e + 12), cd_off = rd32(e + 16);

  if (n_entries == 0xffff || cd_size == 0xffffffffu || cd_off == 0xffffffffu) {
    // zip64: a 20-byte locator right before the EOCD points at the zip64 EOCD.
    if (eocd < 20 || rd32(b + eocd - 20) != kZip64LocatorSig)
      throw fail("zip64 archive without a zip64 end-of-central-directory locator");
    const uint64_t z64 = rd64(b + eocd - 20 + 8);
    if (!fits(z64, 56, eocd - 20) || rd32(b + z64) != kZip64EocdSig)
      throw fail("zip64 end-of-central-directory record at " + std::to_string(z64) +
                 " is missing or outside the file");
    disk = rd32(b + z64 + 16);
    cd_disk = rd32(b + z64 + 20);
    n_entries = rd64(b + z64 + 32);
    cd_size = rd64(b + z64 + 40);
    cd_off = rd64(b + z64 + 48);
  }
  if (disk != 0 || cd_disk != 0) throw fail("multi-volume zip archives are not supported");
  if (!fits(cd_off, cd_size, eocd))
    throw fail("central directory (offset " + std::to_string(cd_off) + ", " + std::to_string(cd_size) +
               " bytes) lies outside the file; the archive is truncated or corrupt");
  if (n_entries > cd_size / kCentralSize)
    throw fail("central directory claims " + std::to_string(n_entries) + " entries in " +
               std::to_string(cd_size) + " bytes");

  z.entries_.reserve(n_entries);
  uint64_t pos = cd_off;
  const uint64_t cd_end = cd_off + cd_size;
  for (uint64_t i = 0; i < n_entries; ++i) {
    if (!fits(pos, kCentralSize, cd_end) || rd32(b + pos) != kCentralSig)
      throw fail("central directory entry " + std::to_string(i) + " at offset " + std::to_string(pos) +
                 " is malformed");
    const uint8_t* c = b + pos;
    ZipEntry ent;
    ent.flags = rd16(c + 8);
    ent.method = rd16(c + 10);
    ent.crc32 = rd32(c + 16);
    ent.comp_size = rd32(c + 20);
    ent.size = rd32(c + 24);
    const uint64_t name_len = rd16(c + 28), extra_len = rd16(c + 30), comment_len = rd16(c + 32);
    const uint64_t entry_disk = rd16(c + 34);
    ent.local_offset = rd32(c + 42);
    if (!fits(pos + kCentralSize, name_len + extra_len + comment_len, cd_end))
      throw fail("central directory entry " + std::to_string(i) + " runs past the directory");
    ent.name.assign(reinterpret_cast<const char*>(c + kCentralSize), name_len);
    const uint8_t* x = c + kCentralSize + name_len;
    read_zip64_extra(x, x + extra_len, ent, name);
    if (entry_disk != 0 && entry_disk != 0xffff) throw fail("multi-volume zip archives are not supported");
    if (z.index_.count(ent.name)) throw fail("duplicate zip entry '" + shown(ent.name) + "'");
    z.index_.emplace(ent.name, z.entries_.size());
    z.entries_.push_back(std::move(ent));
    pos += kCentralSize + name_len + extra_len + comment_len;
  }
  return z;
}

const ZipEntry* ZipArchive::find(std::string_view name) const {
  auto it = index_.find(std::string(name));
  return it == index_.end() ? nullptr : &entries_[it->second];
}

std::span<const uint8_t> ZipArchive::data(const ZipEntry& e) const {
  const uint64_t size = bytes_.size();
  const uint8_t* b = bytes_.data();
  const std::string where = name_ + ": zip entry '" + shown(e.name) + "'";
  if (e.flags & 1) throw Error(where + " is encrypted");
  if (e.method != 0)
    throw Error(where + " is compressed (method " + std::to_string(e.method) +
                "); only STORED entries, as torch.save writes them, are supported");
  if (e.comp_size != e.size)
    throw Error(where + " is STORED but its sizes differ (" + std::to_string(e.comp_size) + " vs " +
                std::to_string(e.size) + ")");
  if (!fits(e.local_offset, kLocalSize, size) || rd32(b + e.local_offset) != kLocalSig)
    throw Error(where + ": local header at offset " + std::to_string(e.local_offset) +
                " is missing or outside the file");
  const uint8_t* l = b + e.local_offset;
  const uint64_t name_len = rd16(l + 26), extra_len = rd16(l + 28);
  const uint64_t data_off = e.local_offset + kLocalSize + name_len + extra_len;
  if (!fits(e.local_offset + kLocalSize, name_len, size) ||
      std::string_view(reinterpret_cast<const char*>(l + kLocalSize), name_len) != e.name)
    throw Error(where + ": local header names a different entry");
  if (!fits(data_off, e.size, size))
    throw Error(where + " (" + std::to_string(e.size) + " bytes at offset " + std::to_string(data_off) +
                ") runs past the end of the file; the archive is truncated");
  std::span<const uint8_t> d(b + data_off, (size_t)e.size);
  if (crc32(d) != e.crc32) throw Error(where + " fails its CRC-32 check; the archive is corrupt");
  return d;
}

}  // namespace oscar::torchio
