// Saving, restoring and erasing one slot's cache (llama-server's
// POST /slots/{id}?action=save|restore|erase), in files under
// --slot-save-path (format: slot_file.h, docs/slot-files.md).
//
// The cache is touched only on the scheduler thread, between steps, and
// only while the slot is idle (Scheduler::with_idle_slot): a save copies the
// slot's rows into memory there and writes the file from the caller's
// thread; a restore reads and checks the whole file first (checksum, model,
// cache layout, that it fits) and only then replaces the slot's contents.
// Files are written atomically: a temporary file in the same folder,
// fsync, rename, so a crash never leaves a torn file under the final name.
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "kv/kv_cache.h"
#include "server/scheduler.h"
#include "server/slot_file.h"

namespace oscar::server {

struct SlotSaveResult {
  int id_slot = 0;
  std::string filename;
  size_t n_saved = 0;      // tokens
  uint64_t n_written = 0;  // bytes
  double save_ms = 0;
};

struct SlotRestoreResult {
  int id_slot = 0;
  std::string filename;
  size_t n_restored = 0;  // tokens
  uint64_t n_read = 0;    // bytes
  double restore_ms = 0;
};

// A plain file name: 1-255 bytes, no path separators, no control
// characters, not starting with '.' (which also rules out "." and "..", and
// the temporary files of an unfinished save).
bool valid_slot_filename(const std::string& name);

// Writes `bytes` to dir/name so that dir/name is either the old file or the
// whole new one, also across a crash. Throws Error naming the failing step.
void write_file_atomically(const std::string& dir, const std::string& name, std::span<const uint8_t> bytes);

// The steps of a save and a restore, also used without a server by
// bench/bench_slot_save.cpp.
//
// The file for the first tokens.size() positions of seq (which must hold
// exactly that many) up to its checksum: run where the cache is owned, then
// finish_slot_file() (the CRC-32) anywhere.
std::vector<uint8_t> encode_slot(const kv::KvCache& cache, int seq, std::span<const int32_t> tokens,
                                 const SlotIdentity& here);
// A file read and checked against this server (`n_ctx_slot`: positions a
// slot may hold), its rows still in `bytes`; ApiError 400 naming the defect.
struct CheckedSlotFile {
  std::vector<uint8_t> bytes;
  SlotFile file;
};
CheckedSlotFile read_checked_slot_file(const std::string& dir, const std::string& filename, const SlotIdentity& here,
                                       int n_ctx_slot);

class SlotPersistence {
 public:
  // `here`: this server's identity (slot_identity.h); `dir`: --slot-save-path.
  SlotPersistence(std::string dir, const SlotIdentity& here, Scheduler& scheduler)
      : dir_(std::move(dir)), here_(here), scheduler_(scheduler) {}

  // Each throws ApiError: 400 for a bad file name, a missing, corrupt or
  // incompatible file, or a slot id that does not exist; 409 while the slot
  // is busy; 500 when the file cannot be written.
  SlotSaveResult save(int id_slot, const std::string& filename);
  SlotRestoreResult restore(int id_slot, const std::string& filename);
  size_t erase(int id_slot);  // tokens that were cached

 private:
  std::string dir_;
  const SlotIdentity& here_;
  Scheduler& scheduler_;
};

}  // namespace oscar::server
