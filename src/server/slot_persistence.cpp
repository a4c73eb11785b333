#include "server/slot_persistence.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstring>
#include <filesystem>
#include <random>

#include "core/error.h"
#include "kv/seq_snapshot.h"
#include "server/api_error.h"
#include "server/slot_identity.h"

namespace oscar::server {

namespace {

using Clock = std::chrono::steady_clock;
double ms_since(Clock::time_point t0) { return std::chrono::duration<double, std::milli>(Clock::now() - t0).count(); }

std::string sys_error(const std::string& what, const std::string& path) {
  return what + " " + path + ": " + std::strerror(errno);
}

// Reads a whole file of at most `limit` bytes; ApiError 400 when it is
// missing, not a regular file or too large.
std::vector<uint8_t> read_slot_file(const std::string& path, const std::string& filename, uint64_t limit) {
  // O_NONBLOCK: a FIFO planted under the name must not block the open (it is refused below).
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NONBLOCK);
  if (fd < 0) throw ApiError(400, "slot file " + filename + " cannot be opened in --slot-save-path: " + std::strerror(errno));
  struct stat st{};
  std::vector<uint8_t> bytes;
  try {
    if (::fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) throw ApiError(400, "slot file " + filename + " is not a regular file");
    if ((uint64_t)st.st_size > limit)
      throw ApiError(400, "slot file " + filename + " has " + std::to_string(st.st_size) +
                              " bytes, more than a slot of this server can hold (" + std::to_string(limit) + ")");
    bytes.resize((size_t)st.st_size);
    size_t at = 0;
    while (at < bytes.size()) {
      const ssize_t n = ::read(fd, bytes.data() + at, bytes.size() - at);
      if (n < 0 && errno == EINTR) continue;
      if (n <= 0) throw ApiError(400, "slot file " + filename + ": read failed or the file shrank");
      at += (size_t)n;
    }
  } catch (...) {
    ::close(fd);
    throw;
  }
  ::close(fd);
  return bytes;
}

}  // namespace

bool valid_slot_filename(const std::string& name) {
  if (name.empty() || name.size() > 255 || name[0] == '.') return false;
  return std::none_of(name.begin(), name.end(), [](char c) {
    const auto u = (unsigned char)c;
    return u < 0x20 || u == 0x7f || c == '/' || c == '\\' || c == ':';
  });
}

void write_file_atomically(const std::string& dir, const std::string& name, std::span<const uint8_t> bytes) {
  std::random_device rd;
  const std::string tmp = dir + "/." + name + ".tmp-" + std::to_string(::getpid()) + "-" + std::to_string(rd());
  const int fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
  if (fd < 0) throw Error(sys_error("cannot create", tmp));
  auto fail = [&](const std::string& msg) {
    ::close(fd);
    ::unlink(tmp.c_str());
    throw Error(msg);
  };
  for (size_t at = 0; at < bytes.size();) {
    const ssize_t n = ::write(fd, bytes.data() + at, std::min<size_t>(bytes.size() - at, 1u << 30));
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) fail(sys_error("cannot write", tmp));
    at += (size_t)n;
  }
  if (::fsync(fd) != 0) fail(sys_error("cannot fsync", tmp));
  if (::close(fd) != 0) {
    ::unlink(tmp.c_str());
    throw Error(sys_error("cannot close", tmp));
  }
  const std::string final_path = dir + "/" + name;
  if (::rename(tmp.c_str(), final_path.c_str()) != 0) {
    const std::string msg = sys_error("cannot rename to", final_path);
    ::unlink(tmp.c_str());
    throw Error(msg);
  }
  // The rename itself reaches the disk with the folder's entry.
  const int dfd = ::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (dfd >= 0) {
    ::fsync(dfd);
    ::close(dfd);
  }
}

namespace {

void check_filename(const std::string& filename) {
  if (!valid_slot_filename(filename))
    throw ApiError(400, "Invalid filename: a plain file name inside --slot-save-path is expected (no path separators, "
                        "not starting with '.')");
}

// The largest file a slot of n_ctx_slot positions can need.
uint64_t max_file_bytes(const SlotIdentity& here, int n_ctx_slot) {
  uint64_t per_position = 4;  // the token
  for (const auto& s : here.stores)
    per_position += (uint64_t)s.n_head_kv * (uint64_t)std::max(s.main_row_bytes, 2 * s.head_dim);
  return (1u << 20) + per_position * (uint64_t)n_ctx_slot;
}

}  // namespace

std::vector<uint8_t> encode_slot(const kv::KvCache& cache, int seq, std::span<const int32_t> tokens,
                                 const SlotIdentity& here) {
  const int n = (int)tokens.size();
  require(cache.n_pos(seq) == n, "slot " + std::to_string(seq) + ": cached tokens and KV positions disagree");
  const std::vector<int32_t> splits = kv::sequence_splits(cache, seq, n);
  uint64_t rows = 0;
  for (size_t i = 0; i < splits.size(); ++i) rows += kv::store_rows_bytes(here.stores[i], n, splits[i]);
  std::vector<uint8_t> file;
  file.reserve((size_t)rows + 4096 + 4 * (size_t)n + 4 * splits.size());
  begin_slot_file(file, here, tokens, splits, rows);
  kv::export_rows(cache, seq, n, splits, file);
  return file;
}

CheckedSlotFile read_checked_slot_file(const std::string& dir, const std::string& filename, const SlotIdentity& here,
                                       int n_ctx_slot) {
  check_filename(filename);
  CheckedSlotFile c;
  c.bytes = read_slot_file(dir + "/" + filename, filename, max_file_bytes(here, n_ctx_slot));
  try {
    c.file = decode_slot_file(c.bytes);
  } catch (const SlotFileError& e) {
    throw ApiError(400, "cannot restore " + filename + ": " + e.what());
  }
  const SlotFile& f = c.file;
  if (const std::string diff = identity_mismatch(f.identity, here); !diff.empty())
    throw ApiError(400, "cannot restore " + filename + ": it does not match this server: " + diff);
  const int n = (int)f.tokens.size();
  if (n > n_ctx_slot)
    throw ApiError(400, "cannot restore " + filename + ": its " + std::to_string(n) + " tokens exceed the " +
                            std::to_string(n_ctx_slot) + " positions of a slot");
  for (int32_t t : f.tokens)
    if (t < 0 || (uint32_t)t >= here.n_vocab)
      throw ApiError(400, "cannot restore " + filename + ": token id " + std::to_string(t) + " is outside the vocabulary");
  return c;
}

SlotSaveResult SlotPersistence::save(int id_slot, const std::string& filename) {
  const auto t0 = Clock::now();
  check_filename(filename);
  std::vector<uint8_t> file;
  size_t n_saved = 0;
  // Only the copy runs on the scheduler thread; the checksum and the write do not.
  scheduler_.with_idle_slot(id_slot, [&](SlotAccess& a) {
    file = encode_slot(a.cache, a.seq, a.tokens, here_);
    n_saved = a.tokens.size();
  });
  finish_slot_file(file);
  try {
    std::filesystem::create_directories(dir_);
    write_file_atomically(dir_, filename, file);
  } catch (const std::exception& e) {
    throw ApiError(500, std::string("cannot save slot: ") + e.what(), "server_error");
  }
  return {id_slot, filename, n_saved, (uint64_t)file.size(), ms_since(t0)};
}

SlotRestoreResult SlotPersistence::restore(int id_slot, const std::string& filename) {
  const auto t0 = Clock::now();
  const CheckedSlotFile c = read_checked_slot_file(dir_, filename, here_, scheduler_.config().n_ctx_slot);
  const SlotFile& f = c.file;
  const int n = (int)f.tokens.size();
  scheduler_.with_idle_slot(id_slot, [&](SlotAccess& a) {
    if (!a.make_room(n))
      throw ApiError(400, "cannot restore " + filename + ": the KV pool has no room for " + std::to_string(n) +
                              " positions while the other slots are busy");
    kv::import_sequence(a.cache, a.seq, n, f.splits, f.rows);
    a.tokens = f.tokens;
  });
  return {id_slot, filename, (size_t)n, (uint64_t)c.bytes.size(), ms_since(t0)};
}

size_t SlotPersistence::erase(int id_slot) {
  size_t n = 0;
  scheduler_.with_idle_slot(id_slot, [&](SlotAccess& a) {
    n = a.tokens.size();
    a.cache.clear(a.seq);
    a.tokens.clear();
  });
  return n;
}

}  // namespace oscar::server
