// The file a slot is saved to (POST /slots/{id}?action=save), byte for byte
// in docs/slot-files.md: a header naming the model and the cache layout the
// rows were stored with, the slot's tokens, one tier split per KV store, the
// rows as stored (kv/seq_snapshot.h), and a CRC-32 of everything before it.
//
// This file only encodes and parses: decode_slot_file() checks that the
// bytes are a well-formed, untruncated, uncorrupted file whose sizes add up,
// never that they fit this server (slot_persistence.h does that). It needs
// nothing but the bytes, so it is fuzzed on its own (fuzz/slot_file_fuzz.cpp).
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "core/error.h"
#include "kv/store_shape.h"

namespace oscar::server {

inline constexpr char kSlotFileMagic[8] = {'O', 'S', 'C', 'A', 'R', 'S', 'L', 'T'};
inline constexpr uint32_t kSlotFileVersion = 1;

// Limits a file must respect before anything is allocated from its counts.
inline constexpr uint32_t kSlotFileMaxArch = 64;          // bytes of the architecture name
inline constexpr uint32_t kSlotFileMaxStores = 1024;      // K and V stores
inline constexpr uint32_t kSlotFileMaxTokens = 1u << 24;  // positions of one slot
inline constexpr uint32_t kSlotFileMaxHeads = 1024;
inline constexpr uint32_t kSlotFileMaxHeadDim = 1024;
inline constexpr uint32_t kSlotFileMaxRowBytes = 8192;

// Everything that must match between the server that saved a slot and the
// one restoring it for the rows to mean the same thing.
struct SlotIdentity {
  // The model.
  std::string arch;
  uint32_t n_layer = 0, n_vocab = 0, n_embd = 0;
  uint64_t model_hash = 0;     // GGUF metadata (tokenizer included), tensor directory, weight samples
  uint32_t rotation_mode = 0;  // runtime::RotationMode
  uint64_t rotation_hash = 0;  // the rotation matrices K and V rows were stored under
  // The cache.
  uint32_t type_k = 0, type_v = 0;  // kv::CacheType
  float q2_clip_k = 0, q2_clip_v = 0;
  uint32_t q2_group_k = 0, q2_group_v = 0;
  uint32_t hp_sink = 0, hp_recent = 0;  // as configured (each store's effective tiers are in `stores`)
  uint32_t page_positions = 0;          // informational: rows do not depend on the page size
  std::vector<kv::StoreShape> stores;
};

// A parsed file; `rows` points into the bytes given to decode_slot_file().
struct SlotFile {
  SlotIdentity identity;
  std::vector<int32_t> tokens;  // the slot's cached tokens (n positions)
  std::vector<int32_t> splits;  // one per store
  std::span<const uint8_t> rows;
};

class SlotFileError : public Error {
 public:
  using Error::Error;
};

// The file's bytes up to the rows; the caller appends exactly `rows_bytes`
// bytes of rows (kv::export_rows) and then calls finish_slot_file().
void begin_slot_file(std::vector<uint8_t>& out, const SlotIdentity& id, std::span<const int32_t> tokens,
                     std::span<const int32_t> splits, uint64_t rows_bytes);
void finish_slot_file(std::vector<uint8_t>& out);  // appends the CRC-32

// Parses and checks a whole file; throws SlotFileError naming the defect
// (not a slot file, unsupported version, checksum mismatch, a count out of
// bounds, sizes that do not add up).
SlotFile decode_slot_file(std::span<const uint8_t> bytes);

// zlib's CRC-32 of the bytes (what the trailer holds).
uint32_t slot_file_crc(std::span<const uint8_t> bytes);

}  // namespace oscar::server
