// Reading PyTorch checkpoints (torch.save, zip format) without Python.
//
// A checkpoint is a zip (see zip_reader.h) holding a pickle (data.pkl) whose
// tensors refer, through persistent ids, to raw storages stored as separate
// zip entries. We run the subset of the pickle machine that torch.save emits
// (protocol 2, plus the few protocol 3/4 opcodes a newer Python may use) with
// an allow-list of GLOBALs: collections.OrderedDict, torch._utils.
// _rebuild_tensor_v2 / _rebuild_parameter and torch.<Type>Storage. Nothing
// is ever executed; anything else is refused with a one-line oscar::Error.
//
// Usage:
//   auto ck = torchio::Checkpoint::open("k_rotation_qqt_r_h_pbr.pt");
//   const Value& layers = ck.root().at("layers");
//   std::vector<float> m = layers.at(0).at("rotation").tensor().to_float32();
#pragma once

#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "core/mapped_file.h"
#include "torchio/zip_reader.h"

namespace oscar::torchio {

enum class DType { F64, F32, F16, BF16, I64, I32, I16, I8, U8, Bool };
const char* dtype_name(DType t);
size_t dtype_size(DType t);
bool dtype_is_float(DType t);

// One untyped-by-pickle storage: a zip entry of numel elements.
struct Storage {
  std::string key;
  DType dtype = DType::F32;
  uint64_t numel = 0;
  std::span<const uint8_t> bytes;  // inside the checkpoint's buffer
};

// A strided view of a storage, as _rebuild_tensor_v2 describes it. The
// constructor's checks guarantee every element lies inside the storage.
struct Tensor {
  DType dtype = DType::F32;
  std::vector<int64_t> shape;
  std::vector<int64_t> strides;  // in elements
  int64_t storage_offset = 0;    // in elements
  std::shared_ptr<const Storage> storage;

  uint64_t numel() const;
  bool is_contiguous() const;
  // The elements in row-major (C) order, converted to float32 (exact for
  // F32/F16/BF16; F64 is rounded). Integer/bool tensors are refused.
  std::vector<float> to_float32() const;
  std::string describe() const;  // e.g. "float32[128, 128]"
};

// A node of the value tree. Containers own shared children; once a container
// is placed inside another it is frozen, so the tree has no cycles and its
// depth is bounded (see kMaxDepth in checkpoint.cpp).
struct Value {
  enum class Kind { None, Bool, Int, Float, Str, Bytes, List, Tuple, Dict, Tensor,
                    // internal to the pickle machine; never in a finished tree
                    Global, Storage };
  Kind kind = Kind::None;
  bool b = false;
  int64_t i = 0;
  double f = 0;
  std::string s;  // Str, Bytes; Global: "module.name"
  std::vector<std::shared_ptr<Value>> items;                                   // List, Tuple
  std::vector<std::pair<std::shared_ptr<Value>, std::shared_ptr<Value>>> dict;  // Dict (insertion order)
  std::shared_ptr<const Tensor> tens;
  std::shared_ptr<const Storage> stor;
  bool ordered = false;  // Dict made by collections.OrderedDict
  bool frozen = false;
  bool internal = false;  // a tuple holding a Global/Storage (pickle machine only)
  int depth = 0;         // 0 for leaves, 1 + max child depth for containers

  bool is_none() const { return kind == Kind::None; }
  bool is_int() const { return kind == Kind::Int || kind == Kind::Bool; }
  bool is_str() const { return kind == Kind::Str; }
  bool is_dict() const { return kind == Kind::Dict; }
  bool is_tensor() const { return kind == Kind::Tensor; }
  bool is_sequence() const { return kind == Kind::List || kind == Kind::Tuple; }

  // Lookups in a Dict by string or integer key; nullptr when absent (or when
  // this is not a dict). at() throws oscar::Error naming the key.
  const Value* get(std::string_view key) const;
  const Value* get(int64_t key) const;
  const Value& at(std::string_view key) const;
  const Value& at(int64_t key) const;
  // Typed access that throws oscar::Error naming `what` on a kind mismatch.
  int64_t as_int(const std::string& what) const;
  double as_float(const std::string& what) const;  // Float or Int
  const std::string& as_str(const std::string& what) const;
  const Tensor& tensor(const std::string& what = "value") const;

  std::string kind_name() const;
};
using ValuePtr = std::shared_ptr<Value>;

// Parses a pickle that may refer to storages (resolved through `zip` under
// `prefix` + "data/<key>"); exposed for the fuzzer and tests. `zip` may be
// null, in which case any persistent id is refused.
ValuePtr parse_pickle(std::span<const uint8_t> pkl, const ZipArchive* zip, const std::string& prefix,
                      const std::string& name);

class Checkpoint {
 public:
  // Maps and parses `path`; throws oscar::Error on any defect.
  static Checkpoint open(const std::string& path);
  // Parses an in-memory image; `bytes` must outlive the checkpoint.
  static Checkpoint parse(std::span<const uint8_t> bytes, const std::string& name = "<memory>");

  const Value& root() const { return *root_; }
  const std::string& name() const { return name_; }
  // The folder inside the zip that holds data.pkl (e.g. "archive/").
  const std::string& prefix() const { return prefix_; }

 private:
  MappedFile map_;  // keeps the storages' bytes alive when opened from a path
  std::string name_;
  std::string prefix_;
  ValuePtr root_;
};

}  // namespace oscar::torchio
