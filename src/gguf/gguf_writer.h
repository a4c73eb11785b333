// Streaming GGUF writer (version 3 by default, or 2 when copying a v2 file).
//
// Use in two phases:
//   1. declare: add_kv(...) for every metadata pair, add_tensor(...) for every
//      tensor (name, type, shape) — in the order they should appear;
//   2. data: write each tensor's bytes in declared order, whole
//      (write_tensor) or in as many chunks as convenient (write_tensor_data);
//      then finish().
// Only the header and one caller-provided chunk are ever in memory. Output goes
// to "<path>.tmp" and is renamed to <path> by finish(), so a failure (a throw,
// a missing tensor, the writer destroyed early) never leaves a half-written
// file at <path>. Every tensor must receive exactly its byte count.
//
// Layout matches ggml's: the data section starts at the header end rounded up
// to the alignment (general.alignment, default 32), each tensor starts
// aligned and is followed by zero padding up to the alignment. Consequently
// reading a writer-produced file and copying it (copy_gguf) gives identical
// bytes.
#pragma once

#include <cstdint>
#include <cstdio>
#include <span>
#include <string>
#include <string_view>
#include <unordered_set>
#include <vector>

#include "core/tensor_type.h"
#include "gguf/gguf_file.h"
#include "gguf/gguf_value.h"

namespace oscar::gguf {

class GgufWriter {
 public:
  explicit GgufWriter(std::string path, uint32_t version = 3);
  ~GgufWriter();  // abandons unfinished output (removes the temp file)
  GgufWriter(const GgufWriter&) = delete;
  GgufWriter& operator=(const GgufWriter&) = delete;

  // --- declaration phase (throws oscar::Error once data writing has begun) ---
  // Adds a metadata pair, keeping its exact value type. Duplicate keys, empty
  // keys and malformed values (e.g. array items not of the element type) are
  // refused. "general.alignment" must be a uint32 power of two and sets the
  // alignment used for the data section.
  void add_kv(std::string key, Value value);
  // Declares a tensor: 1..4 non-zero dims, ne[0] (row length) first, a
  // multiple of the type's block size. Any known type, computable or not.
  void add_tensor(std::string name, TensorType type, std::vector<uint64_t> shape);
  // Copies all metadata (exact types, same order) / all tensor declarations
  // of `src`.
  void add_metadata_from(const GgufFile& src);
  void add_tensors_from(const GgufFile& src);

  size_t alignment() const { return alignment_; }
  uint32_t version() const { return version_; }
  // Declared tensors with n_bytes; offsets are final once data writing begins.
  const std::vector<TensorInfo>& tensors() const { return tensors_; }

  // --- data phase (the header is written on the first call) ---
  // The next bytes of the current tensor (the first one not yet complete, in
  // declared order). A chunk may not run past the current tensor's end.
  void write_tensor_data(std::span<const uint8_t> chunk);
  // The whole of tensor `name`, which must be the next one due and not yet
  // started.
  void write_tensor(std::string_view name, std::span<const uint8_t> data);
  // Index of the tensor the next bytes belong to (== tensors().size() when
  // all are complete) and how many bytes it still needs.
  size_t current_tensor() const { return cur_; }
  size_t bytes_left_in_current() const;
  // Checks every tensor is complete, flushes, closes and renames the temp
  // file to the final path. Throws (and removes the temp file) on failure.
  void finish();

 private:
  [[noreturn]] void fail(const std::string& msg);  // abandons output, throws
  void require_declaring(const char* what) const;
  void begin();
  void write_bytes(const void* p, size_t n);
  void write_padding();
  void abandon() noexcept;

  std::string path_;
  std::string tmp_path_;
  uint32_t version_;
  size_t alignment_ = kDefaultAlignment;
  std::vector<KeyValue> kvs_;
  std::unordered_set<std::string> keys_;
  std::vector<TensorInfo> tensors_;
  std::unordered_set<std::string> names_;

  std::FILE* out_ = nullptr;
  bool begun_ = false;
  bool finished_ = false;
  bool failed_ = false;
  uint64_t written_ = 0;  // bytes written to the file so far
  size_t cur_ = 0;        // tensor currently being written
  size_t cur_done_ = 0;   // bytes of it written so far
};

// Writes a copy of `src` to `dst_path`: same version, metadata (exact types,
// same order) and tensor bytes, laid out the canonical way.
void copy_gguf(const GgufFile& src, const std::string& dst_path);

// Encoded size of a value (without key and type tag), for tools and tests.
uint64_t encoded_value_size(const Value& v);

}  // namespace oscar::gguf
