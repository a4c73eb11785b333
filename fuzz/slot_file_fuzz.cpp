// libFuzzer target for the slot file parser (src/server/slot_file.h), the
// only code that reads a file a client may have planted in --slot-save-path.
// The first input byte chooses the mode: odd, the rest gets a correct
// CRC-32 trailer before parsing, so the structural checks behind the
// checksum are explored too; even, the rest is parsed as it is. Anything
// must parse or be refused with SlotFileError, never crash or read out of
// bounds; a file that parses must re-encode to the very same bytes, and its
// rows must be exactly what its shapes and splits say.
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <vector>

#include "kv/store_shape.h"
#include "server/slot_file.h"

using namespace oscar;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size == 0) return 0;
  const bool reseal = data[0] & 1;
  std::vector<uint8_t> bytes(data + 1, data + size);
  if (reseal && bytes.size() >= 4) {
    bytes.resize(bytes.size() - 4);
    server::finish_slot_file(bytes);
  }
  server::SlotFile f;
  try {
    f = server::decode_slot_file(bytes);
  } catch (const server::SlotFileError&) {
    return 0;
  }
  uint64_t expected = 0;
  if (f.splits.size() != f.identity.stores.size()) std::abort();
  for (size_t i = 0; i < f.splits.size(); ++i) {
    if (!kv::split_valid(f.identity.stores[i], (int)f.tokens.size(), f.splits[i])) std::abort();
    expected += kv::store_rows_bytes(f.identity.stores[i], (int)f.tokens.size(), f.splits[i]);
  }
  if (expected != f.rows.size()) std::abort();
  std::vector<uint8_t> again;
  server::begin_slot_file(again, f.identity, f.tokens, f.splits, f.rows.size());
  again.insert(again.end(), f.rows.begin(), f.rows.end());
  server::finish_slot_file(again);
  if (again != bytes) std::abort();
  return 0;
}
