// Reading GGUF files (versions 2 and 3): memory-mapped, fully validated. Every
// count, offset and size is checked; a bad file throws oscar::Error with one
// line naming what is wrong and where (byte offset, key or tensor name).
// Tensor data is used in place from the map.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <span>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "core/mapped_file.h"
#include "core/tensor_type.h"
#include "gguf/gguf_value.h"

namespace oscar::gguf {

constexpr uint32_t kMagic = 0x46554747;  // "GGUF" little-endian
constexpr size_t kDefaultAlignment = 32;
constexpr int kMaxDims = 4;

struct TensorInfo {
  std::string name;
  TensorType type = TensorType::F32;
  std::vector<uint64_t> shape;  // ne[0] (contiguous, row length) first
  uint64_t offset = 0;          // relative to the start of the data section
  size_t n_bytes = 0;           // checked against the file size

  uint64_t n_elements() const;
  uint64_t n_rows() const;  // product of shape[1..]
  uint64_t row_length() const { return shape.empty() ? 1 : shape[0]; }
};

class GgufFile {
 public:
  // Opens and validates `path`; throws oscar::Error on any defect. Inference
  // loads the file (FileResidence::kLoaded, see core/mapped_file.h); tools
  // that only read metadata map it.
  static GgufFile open(const std::string& path, FileResidence how = FileResidence::kMapped);
  // Parses an in-memory image (used by the fuzzer and tests); `bytes` must
  // outlive the returned object.
  static GgufFile parse(std::span<const uint8_t> bytes, const std::string& name = "<memory>");

  uint32_t version() const { return version_; }
  size_t alignment() const { return alignment_; }
  size_t data_offset() const { return data_offset_; }  // absolute file offset of tensor data
  const std::string& path() const { return name_; }
  size_t file_size() const { return bytes_.size(); }

  const std::vector<KeyValue>& metadata() const { return kvs_; }
  const Value* find(std::string_view key) const;
  // Typed lookups that throw a clear error when the key is present with the
  // wrong type; the *_or forms return `def` when absent.
  std::optional<std::string> get_string(std::string_view key) const;
  std::optional<int64_t> get_int(std::string_view key) const;
  std::optional<double> get_float(std::string_view key) const;
  std::optional<bool> get_bool(std::string_view key) const;
  std::string get_string_or(std::string_view key, const std::string& def) const;
  int64_t get_int_or(std::string_view key, int64_t def) const;
  double get_float_or(std::string_view key, double def) const;
  const Array* get_array(std::string_view key) const;

  const std::vector<TensorInfo>& tensors() const { return tensors_; }
  const TensorInfo* find_tensor(std::string_view name) const;
  // Whether the bytes are mapped or loaded (kLoaded may fall back to kMapped).
  FileResidence residence() const { return map_.residence(); }
  // The tensor's bytes inside the mapped file (bounds already validated).
  std::span<const uint8_t> tensor_data(const TensorInfo& t) const;
  // For a loaded file (not a mapping): edit(t, bytes) may rewrite the bytes
  // of each tensor `pick` selects, in place. Returns false, editing nothing,
  // when the file is mapped. See MappedFile::edit_loaded.
  // oscar-server's sleep: see MappedFile::drop_resident / reload. The
  // metadata parsed at open() is kept; only tensor bytes need the file.
  void drop_resident() { map_.drop_resident(); }
  void reload() { map_.reload(); }
  bool edit_loaded_tensors(const std::function<bool(const TensorInfo&)>& pick,
                           const std::function<void(const TensorInfo&, uint8_t*)>& edit);

 private:
  MappedFile map_;
  std::span<const uint8_t> bytes_;
  std::string name_;
  uint32_t version_ = 0;
  size_t alignment_ = kDefaultAlignment;
  size_t data_offset_ = 0;
  std::vector<KeyValue> kvs_;
  std::unordered_map<std::string, size_t> kv_index_;
  std::vector<TensorInfo> tensors_;
  std::unordered_map<std::string, size_t> tensor_index_;

  friend class Parser;
};

}  // namespace oscar::gguf
