#include "server/slot_file.h"

#include <zlib.h>

#include <bit>
#include <cstring>

namespace oscar::server {

static_assert(std::endian::native == std::endian::little, "slot files are little-endian; add byte swapping here");

namespace {

template <class T>
void put(std::vector<uint8_t>& out, T v) {
  const size_t at = out.size();
  out.resize(at + sizeof(T));
  std::memcpy(out.data() + at, &v, sizeof(T));
}

// Reads fields in order; any read past the end is a truncated file.
class Reader {
 public:
  explicit Reader(std::span<const uint8_t> b) : b_(b) {}
  template <class T>
  T get(const char* what) {
    need(sizeof(T), what);
    T v;
    std::memcpy(&v, b_.data() + at_, sizeof(T));
    at_ += sizeof(T);
    return v;
  }
  uint32_t get_u32_max(const char* what, uint32_t max) {
    const uint32_t v = get<uint32_t>(what);
    if (v > max)
      throw SlotFileError(std::string("slot file: ") + what + " " + std::to_string(v) + " exceeds the limit of " +
                          std::to_string(max));
    return v;
  }
  std::span<const uint8_t> take(size_t n, const char* what) {
    need(n, what);
    auto s = b_.subspan(at_, n);
    at_ += n;
    return s;
  }
  size_t left() const { return b_.size() - at_; }

 private:
  void need(size_t n, const char* what) const {
    if (n > left()) throw SlotFileError(std::string("slot file: truncated in ") + what);
  }
  std::span<const uint8_t> b_;
  size_t at_ = 0;
};

void put_store(std::vector<uint8_t>& out, const kv::StoreShape& s) {
  for (int v : {s.layer, (int)s.is_v, (int)s.main_type, s.n_head_kv, s.head_dim, s.main_row_bytes, s.sink, s.recent,
                s.ring})
    put<uint32_t>(out, (uint32_t)v);
}

kv::StoreShape get_store(Reader& r, uint32_t n_layer) {
  kv::StoreShape s;
  s.layer = (int)r.get<uint32_t>("store layer");
  if ((uint32_t)s.layer >= n_layer) throw SlotFileError("slot file: a store names layer " + std::to_string(s.layer) +
                                                        " of a model with " + std::to_string(n_layer));
  const uint32_t is_v = r.get_u32_max("store kind", 1);
  s.is_v = is_v == 1;
  s.main_type = (kv::CacheType)r.get_u32_max("store cache type", (uint32_t)kv::CacheType::Q2_0);
  s.n_head_kv = (int)r.get_u32_max("store KV heads", kSlotFileMaxHeads);
  s.head_dim = (int)r.get_u32_max("store head dim", kSlotFileMaxHeadDim);
  s.main_row_bytes = (int)r.get_u32_max("store row bytes", kSlotFileMaxRowBytes);
  s.sink = (int)r.get_u32_max("store sink tier", kSlotFileMaxTokens);
  s.recent = (int)r.get_u32_max("store recent tier", kSlotFileMaxTokens);
  s.ring = (int)r.get_u32_max("store ring", kSlotFileMaxTokens);
  if (s.n_head_kv == 0 || s.head_dim == 0 || s.main_row_bytes == 0)
    throw SlotFileError("slot file: a store has no heads, no head dim or empty rows");
  if (s.ring > 0 && (s.sink > 0 || s.recent > 0))
    throw SlotFileError("slot file: a sliding-window store cannot have f16 tiers");
  return s;
}

}  // namespace

uint32_t slot_file_crc(std::span<const uint8_t> bytes) {
  uLong crc = crc32(0L, Z_NULL, 0);
  // zlib takes a uInt length: feed large buffers in pieces.
  for (size_t at = 0; at < bytes.size();) {
    const size_t n = std::min<size_t>(bytes.size() - at, 1u << 30);
    crc = crc32(crc, bytes.data() + at, (uInt)n);
    at += n;
  }
  return (uint32_t)crc;
}

void begin_slot_file(std::vector<uint8_t>& out, const SlotIdentity& id, std::span<const int32_t> tokens,
                     std::span<const int32_t> splits, uint64_t rows_bytes) {
  out.insert(out.end(), kSlotFileMagic, kSlotFileMagic + 8);
  put<uint32_t>(out, kSlotFileVersion);
  put<uint32_t>(out, (uint32_t)id.arch.size());
  out.insert(out.end(), id.arch.begin(), id.arch.end());
  put<uint32_t>(out, id.n_layer);
  put<uint32_t>(out, id.n_vocab);
  put<uint32_t>(out, id.n_embd);
  put<uint64_t>(out, id.model_hash);
  put<uint32_t>(out, id.rotation_mode);
  put<uint64_t>(out, id.rotation_hash);
  put<uint32_t>(out, id.type_k);
  put<uint32_t>(out, id.type_v);
  put<float>(out, id.q2_clip_k);
  put<uint32_t>(out, id.q2_group_k);
  put<float>(out, id.q2_clip_v);
  put<uint32_t>(out, id.q2_group_v);
  put<uint32_t>(out, id.hp_sink);
  put<uint32_t>(out, id.hp_recent);
  put<uint32_t>(out, id.page_positions);
  put<uint32_t>(out, (uint32_t)id.stores.size());
  for (const auto& s : id.stores) put_store(out, s);
  put<uint32_t>(out, (uint32_t)tokens.size());
  for (int32_t t : tokens) put<int32_t>(out, t);
  for (int32_t s : splits) put<int32_t>(out, s);
  put<uint64_t>(out, rows_bytes);
}

void finish_slot_file(std::vector<uint8_t>& out) { put<uint32_t>(out, slot_file_crc(out)); }

SlotFile decode_slot_file(std::span<const uint8_t> bytes) {
  if (bytes.size() < 12 || std::memcmp(bytes.data(), kSlotFileMagic, 8) != 0)
    throw SlotFileError("not an oscar slot file (no OSCARSLT magic)");
  uint32_t version;
  std::memcpy(&version, bytes.data() + 8, 4);
  if (version != kSlotFileVersion)
    throw SlotFileError("slot file version " + std::to_string(version) + " is not supported (this server reads " +
                        std::to_string(kSlotFileVersion) + ")");
  if (bytes.size() < 16) throw SlotFileError("slot file: truncated before its checksum");
  const auto body = bytes.first(bytes.size() - 4);
  uint32_t stored_crc;
  std::memcpy(&stored_crc, bytes.data() + body.size(), 4);
  if (slot_file_crc(body) != stored_crc)
    throw SlotFileError("slot file: checksum mismatch (the file is truncated or corrupt)");

  Reader r(body.subspan(12));
  SlotFile f;
  SlotIdentity& id = f.identity;
  const uint32_t arch_len = r.get_u32_max("architecture name length", kSlotFileMaxArch);
  const auto arch = r.take(arch_len, "architecture name");
  id.arch.assign(arch.begin(), arch.end());
  id.n_layer = r.get_u32_max("layer count", kSlotFileMaxStores);
  id.n_vocab = r.get<uint32_t>("vocabulary size");
  id.n_embd = r.get<uint32_t>("embedding width");
  id.model_hash = r.get<uint64_t>("model hash");
  id.rotation_mode = r.get<uint32_t>("rotation mode");
  id.rotation_hash = r.get<uint64_t>("rotation hash");
  id.type_k = r.get_u32_max("K cache type", (uint32_t)kv::CacheType::Q2_0);
  id.type_v = r.get_u32_max("V cache type", (uint32_t)kv::CacheType::Q2_0);
  id.q2_clip_k = r.get<float>("q2_0 K clipping");
  id.q2_group_k = r.get<uint32_t>("q2_0 K group size");
  id.q2_clip_v = r.get<float>("q2_0 V clipping");
  id.q2_group_v = r.get<uint32_t>("q2_0 V group size");
  id.hp_sink = r.get<uint32_t>("sink tier");
  id.hp_recent = r.get<uint32_t>("recent tier");
  id.page_positions = r.get<uint32_t>("page size");
  const uint32_t n_stores = r.get_u32_max("store count", kSlotFileMaxStores);
  for (uint32_t i = 0; i < n_stores; ++i) id.stores.push_back(get_store(r, id.n_layer));
  const uint32_t n_tokens = r.get_u32_max("token count", kSlotFileMaxTokens);
  if ((uint64_t)n_tokens * 4 > r.left()) throw SlotFileError("slot file: truncated in tokens");
  f.tokens.resize(n_tokens);
  for (auto& t : f.tokens) t = r.get<int32_t>("tokens");
  uint64_t expected = 0;
  for (const auto& s : id.stores) {
    const int32_t split = r.get<int32_t>("tier splits");
    if (!kv::split_valid(s, (int)n_tokens, split))
      throw SlotFileError("slot file: tier split " + std::to_string(split) + " of layer " + std::to_string(s.layer) +
                          (s.is_v ? " V" : " K") + " is impossible for " + std::to_string(n_tokens) + " positions");
    f.splits.push_back(split);
    expected += kv::store_rows_bytes(s, (int)n_tokens, split);
  }
  const uint64_t rows_bytes = r.get<uint64_t>("row byte count");
  if (rows_bytes != expected)
    throw SlotFileError("slot file: " + std::to_string(rows_bytes) + " bytes of rows declared, the shapes need " +
                        std::to_string(expected));
  if (rows_bytes != r.left())
    throw SlotFileError("slot file: " + std::to_string(r.left()) + " bytes of rows present, " +
                        std::to_string(rows_bytes) + " declared");
  f.rows = r.take((size_t)rows_bytes, "rows");
  return f;
}

}  // namespace oscar::server
