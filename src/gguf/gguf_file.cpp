// The GGUF reader. Layout (all little-endian):
//   u32 magic "GGUF", u32 version, u64 n_tensors, u64 n_kv,
//   n_kv x { string key, u32 value_type, value },
//   n_tensors x { string name, u32 n_dims, u64 ne[n_dims], u32 type, u64 offset },
//   padding to `alignment`, tensor data (offsets relative to that point).
// A string is u64 length + bytes; an array is u32 elem_type + u64 count + items.
//
// The file is hostile input: every read is bounds-checked, every count is
// checked against the bytes that remain *before* anything is allocated, and
// every size computation is overflow-checked.
#include "gguf/gguf_file.h"

#include <algorithm>
#include <cstdio>
#include <cstring>
#include <limits>

#include "core/error.h"

namespace oscar::gguf {

namespace {

bool valid_value_type(uint32_t t) { return t <= (uint32_t)ValueType::FLOAT64; }

// Minimum sizes of the records that counts in the header refer to.
constexpr size_t kMinKvSize = 8 + 1 + 4 + 1;             // key len, >=1 key byte, type, 1-byte value
constexpr size_t kMinTensorInfoSize = 8 + 1 + 4 + 8 + 4 + 8;  // name len, >=1 byte, n_dims, 1 dim, type, offset

// Arrays nest by recursion; the limit keeps a crafted file from exhausting
// the stack. Real files use at most 2 levels.
constexpr int kMaxArrayDepth = 16;

std::string hex32(uint32_t x) {
  char buf[16];
  std::snprintf(buf, sizeof buf, "0x%08x", x);
  return buf;
}

std::string range_str(uint64_t a, uint64_t b) {
  std::string s(1, '[');  // built by appending: GCC 12 warns falsely on "[" + string
  s += std::to_string(a);
  s += "..";
  s += std::to_string(b);
  s += ')';
  return s;
}

}  // namespace

uint64_t TensorInfo::n_elements() const {
  uint64_t n = 1;
  for (uint64_t d : shape) n *= d;  // validated not to overflow at parse time
  return n;
}

uint64_t TensorInfo::n_rows() const {
  uint64_t n = 1;
  for (size_t i = 1; i < shape.size(); ++i) n *= shape[i];
  return n;
}

class Parser {
 public:
  explicit Parser(GgufFile& f) : f_(f), data_(f.bytes_.data()), size_(f.bytes_.size()) {}

  void run() {
    read_header();
    for (uint64_t i = 0; i < n_kv_; ++i) read_kv(i);
    apply_alignment();
    f_.tensors_.reserve((size_t)n_tensors_);
    for (uint64_t i = 0; i < n_tensors_; ++i) read_tensor_info(i);
    place_data();
  }

 private:
  GgufFile& f_;
  const uint8_t* data_;
  size_t size_;
  size_t pos_ = 0;
  uint64_t n_tensors_ = 0;
  uint64_t n_kv_ = 0;
  // Context for error messages inside values: which key, and the index path
  // into nested arrays. Only turned into text when an error is thrown.
  std::string cur_key_;
  uint64_t cur_key_index_ = 0;
  std::vector<uint64_t> array_path_;

  [[noreturn]] void fail(const std::string& msg) const {
    throw Error("gguf: " + f_.name_ + ": " + msg);
  }
  [[noreturn]] void fail_at(size_t off, const std::string& msg) const {
    fail("offset " + std::to_string(off) + ": " + msg);
  }

  size_t left() const { return size_ - pos_; }

  // "key 'name'" or "key #i" plus the array element path, for messages.
  std::string where_kv() const {
    std::string s = cur_key_.empty() ? "key #" + std::to_string(cur_key_index_)
                                     : "key '" + cur_key_ + "'";
    for (uint64_t i : array_path_) s += " element " + std::to_string(i);
    return s;
  }

  void need(size_t n, const std::string& what) const {
    if (left() < n)
      fail_at(pos_, "truncated: " + what + " needs " + std::to_string(n) + " bytes, " +
                        std::to_string(left()) + " left");
  }

  template <class T>
  T read_raw(const std::string& what) {
    need(sizeof(T), what);
    T x;
    std::memcpy(&x, data_ + pos_, sizeof(T));  // files are little-endian, as are our targets
    pos_ += sizeof(T);
    return x;
  }
  uint32_t u32(const std::string& what) { return read_raw<uint32_t>(what); }
  uint64_t u64(const std::string& what) { return read_raw<uint64_t>(what); }

  std::string read_string(const std::string& what) {
    const size_t at = pos_;
    const uint64_t len = u64(what + " length");
    if (len > left())
      fail_at(at, what + " length " + std::to_string(len) + " exceeds the " +
                      std::to_string(left()) + " bytes left in the file");
    std::string s(reinterpret_cast<const char*>(data_ + pos_), (size_t)len);
    pos_ += (size_t)len;
    return s;
  }

  void read_header() {
    need(4, "magic");
    const uint32_t magic = u32("magic");
    if (magic != kMagic) fail_at(0, "not a GGUF file (magic " + hex32(magic) + ", expected 'GGUF')");
    const uint32_t version = u32("version");
    if (version == 1) fail_at(4, "GGUF version 1 is not supported (only versions 2 and 3)");
    if (version == 0x02000000u || version == 0x03000000u)
      fail_at(4, "big-endian GGUF files are not supported");
    if (version != 2 && version != 3)
      fail_at(4, "unsupported GGUF version " + std::to_string(version) + " (only 2 and 3)");
    f_.version_ = version;

    n_tensors_ = u64("tensor count");
    const size_t kv_count_at = pos_;
    n_kv_ = u64("metadata key/value count");
    // Refuse absurd counts before anything is reserved for them.
    if (n_tensors_ > left() / kMinTensorInfoSize)
      fail_at(8, "tensor count " + std::to_string(n_tensors_) + " is impossible: only " +
                     std::to_string(left()) + " bytes follow the header");
    if (n_kv_ > left() / kMinKvSize)
      fail_at(kv_count_at, "metadata key/value count " + std::to_string(n_kv_) +
                               " is impossible: only " + std::to_string(left()) +
                               " bytes follow the header");
    if (n_kv_ * kMinKvSize + n_tensors_ * kMinTensorInfoSize > left())
      fail_at(8, "tensor count " + std::to_string(n_tensors_) + " and key/value count " +
                     std::to_string(n_kv_) + " cannot fit in the " + std::to_string(left()) +
                     " bytes that follow the header");
  }

  void read_kv(uint64_t i) {
    cur_key_.clear();
    cur_key_index_ = i;
    array_path_.clear();
    const size_t key_at = pos_;
    std::string key = read_string("key #" + std::to_string(i));
    if (key.empty()) fail_at(key_at, "key #" + std::to_string(i) + " is empty");
    if (f_.kv_index_.count(key)) fail_at(key_at, "duplicate key '" + display_name(key) + "'");
    cur_key_ = display_name(key);
    const size_t type_at = pos_;
    const uint32_t t = u32(where_kv() + " value type");
    if (!valid_value_type(t))
      fail_at(type_at, "key #" + std::to_string(i) + " ('" + display_name(key) + "') has unknown value type " +
                           std::to_string(t));
    Value v = read_value((ValueType)t, 0);
    f_.kv_index_.emplace(key, f_.kvs_.size());
    f_.kvs_.push_back({std::move(key), std::move(v)});
  }

  Value read_value(ValueType t, int depth) {
    switch (t) {
      case ValueType::UINT8: return Value::u8(read_raw<uint8_t>(where_kv()));
      case ValueType::INT8: return Value::i8(read_raw<int8_t>(where_kv()));
      case ValueType::UINT16: return Value::u16(read_raw<uint16_t>(where_kv()));
      case ValueType::INT16: return Value::i16(read_raw<int16_t>(where_kv()));
      case ValueType::UINT32: return Value::u32(read_raw<uint32_t>(where_kv()));
      case ValueType::INT32: return Value::i32(read_raw<int32_t>(where_kv()));
      case ValueType::UINT64: return Value::u64(read_raw<uint64_t>(where_kv()));
      case ValueType::INT64: return Value::i64(read_raw<int64_t>(where_kv()));
      case ValueType::FLOAT32: return Value::f32(read_raw<float>(where_kv()));
      case ValueType::FLOAT64: return Value::f64(read_raw<double>(where_kv()));
      case ValueType::BOOL: {
        const size_t at = pos_;
        const uint8_t b = read_raw<uint8_t>(where_kv());
        if (b > 1) fail_at(at, where_kv() + ": bool value " + std::to_string(b) + " is not 0 or 1");
        return Value::boolean(b != 0);
      }
      case ValueType::STRING: return Value::str(read_string(where_kv() + " string"));
      case ValueType::ARRAY: return read_array(depth + 1);
    }
    fail_at(pos_, where_kv() + ": unknown value type");  // unreachable: types are checked by callers
  }

  Value read_array(int depth) {
    const size_t at = pos_;
    if (depth > kMaxArrayDepth)
      fail_at(at, where_kv() + ": arrays nested deeper than " + std::to_string(kMaxArrayDepth) +
                      " levels");
    const uint32_t et = u32(where_kv() + " array element type");
    if (!valid_value_type(et))
      fail_at(at, where_kv() + ": array has unknown element type " + std::to_string(et));
    const ValueType elem = (ValueType)et;
    const size_t count_at = pos_;
    const uint64_t n = u64(where_kv() + " array length");
    // A count is refused when even the smallest items could not fit in what is left.
    const size_t min = min_encoded_size(elem);
    if (n > left() / min)
      fail_at(count_at, where_kv() + ": array of " + std::to_string(n) + " " +
                            value_type_name(elem) + " needs at least " +
                            (n > std::numeric_limits<uint64_t>::max() / min
                                 ? std::string("more than 2^64")
                                 : std::to_string(n * min)) +
                            " bytes, only " + std::to_string(left()) + " left");
    auto arr = std::make_shared<Array>();
    arr->elem_type = elem;
    arr->items.reserve((size_t)n);
    array_path_.push_back(0);
    for (uint64_t k = 0; k < n; ++k) {
      array_path_.back() = k;
      arr->items.push_back(read_value(elem, depth));
    }
    array_path_.pop_back();
    Value v;
    v.type = ValueType::ARRAY;
    v.v = std::move(arr);
    return v;
  }

  void apply_alignment() {
    cur_key_.clear();
    array_path_.clear();
    auto it = f_.kv_index_.find("general.alignment");
    if (it == f_.kv_index_.end()) return;
    const Value& v = f_.kvs_[it->second].value;
    if (v.type != ValueType::UINT32)
      fail(std::string("general.alignment has type ") + value_type_name(v.type) +
           ", expected uint32");
    const uint64_t a = *v.as_uint();
    if (a == 0 || (a & (a - 1)) != 0)
      fail("general.alignment " + std::to_string(a) + " is not a non-zero power of two");
    f_.alignment_ = (size_t)a;
  }

  void read_tensor_info(uint64_t i) {
    const std::string idx = "tensor #" + std::to_string(i);
    const size_t name_at = pos_;
    TensorInfo t;
    t.name = read_string(idx + " name");
    if (t.name.empty()) fail_at(name_at, idx + " has an empty name");
    if (f_.tensor_index_.count(t.name)) fail_at(name_at, "duplicate tensor name '" + display_name(t.name) + "'");
    const std::string who = "tensor '" + display_name(t.name) + "'";

    const size_t dims_at = pos_;
    const uint32_t n_dims = u32(who + " n_dims");
    if (n_dims < 1 || n_dims > (uint32_t)kMaxDims)
      fail_at(dims_at, who + " has " + std::to_string(n_dims) + " dimensions (must be 1.." +
                           std::to_string(kMaxDims) + ")");
    uint64_t n_elem = 1;
    for (uint32_t d = 0; d < n_dims; ++d) {
      const size_t at = pos_;
      const uint64_t ne = u64(who + " dimension " + std::to_string(d));
      if (ne == 0) fail_at(at, who + " dimension " + std::to_string(d) + " is zero");
      // ggml counts elements in int64_t.
      if (ne > (uint64_t)std::numeric_limits<int64_t>::max() / n_elem)
        fail_at(at, who + " element count overflows (dimension " + std::to_string(d) + " = " +
                        std::to_string(ne) + ")");
      n_elem *= ne;
      t.shape.push_back(ne);
    }

    const size_t type_at = pos_;
    const uint32_t type_id = u32(who + " type");
    const auto info = tensor_type_info(type_id);
    if (!info) fail_at(type_at, who + " has unknown tensor type " + std::to_string(type_id));
    t.type = info->type;
    if (t.shape[0] % info->block_size != 0)
      fail_at(type_at, who + " (" + info->name + "): row length " + std::to_string(t.shape[0]) +
                           " is not a multiple of the block size " +
                           std::to_string(info->block_size));
    const auto rb = row_bytes(t.type, t.shape[0]);
    const uint64_t rows = t.n_rows();
    if (!rb || rows > std::numeric_limits<size_t>::max() / *rb)
      fail_at(type_at, who + " (" + info->name + ") byte size overflows");
    t.n_bytes = *rb * (size_t)rows;

    const size_t off_at = pos_;
    t.offset = u64(who + " offset");
    if (t.offset % f_.alignment_ != 0)
      fail_at(off_at, who + " offset " + std::to_string(t.offset) +
                          " is not a multiple of the alignment " + std::to_string(f_.alignment_));

    f_.tensor_index_.emplace(t.name, f_.tensors_.size());
    f_.tensors_.push_back(std::move(t));
  }

  void place_data() {
    const size_t a = f_.alignment_;
    const size_t header_end = pos_;
    // align_up without overflow: header_end <= size_ and a is a power of two.
    const size_t pad = (a - header_end % a) % a;
    if (pad > std::numeric_limits<size_t>::max() - header_end)
      fail("data section offset overflows");
    f_.data_offset_ = header_end + pad;
    if (f_.tensors_.empty()) return;  // vocab-only files may end right after the header
    if (f_.data_offset_ > size_)
      fail("data section starts at " + std::to_string(f_.data_offset_) +
           ", past end of file (size " + std::to_string(size_) + ")");

    const uint64_t room = size_ - f_.data_offset_;
    for (const auto& t : f_.tensors_) {
      if (t.offset > room || t.n_bytes > room - t.offset) {
        const uint64_t start = (uint64_t)f_.data_offset_ + t.offset;  // both < 2^63 in practice
        const uint64_t end = t.n_bytes > std::numeric_limits<uint64_t>::max() - start
                                 ? std::numeric_limits<uint64_t>::max()
                                 : start + t.n_bytes;
        fail("tensor '" + display_name(t.name) + "' data " + range_str(start, end) +
             " extends past end of file (size " + std::to_string(size_) + ")");
      }
    }
    // Overlap check: sorted by offset, each tensor must end before the next begins.
    std::vector<size_t> order(f_.tensors_.size());
    for (size_t i = 0; i < order.size(); ++i) order[i] = i;
    std::sort(order.begin(), order.end(), [&](size_t x, size_t y) {
      return f_.tensors_[x].offset < f_.tensors_[y].offset;
    });
    for (size_t k = 1; k < order.size(); ++k) {
      const auto& p = f_.tensors_[order[k - 1]];
      const auto& q = f_.tensors_[order[k]];
      if (p.offset + p.n_bytes > q.offset) {
        const uint64_t base = f_.data_offset_;
        fail("tensors '" + display_name(p.name) + "' " + range_str(base + p.offset, base + p.offset + p.n_bytes) +
             " and '" + display_name(q.name) + "' " + range_str(base + q.offset, base + q.offset + q.n_bytes) +
             " overlap");
      }
    }
  }
};

GgufFile GgufFile::open(const std::string& path, FileResidence how) {
  GgufFile f;
  f.map_ = MappedFile(path, how);
  f.bytes_ = f.map_.bytes();
  f.name_ = path;
  Parser(f).run();
  return f;
}

GgufFile GgufFile::parse(std::span<const uint8_t> bytes, const std::string& name) {
  GgufFile f;
  f.bytes_ = bytes;
  f.name_ = name;
  Parser(f).run();
  return f;
}

const Value* GgufFile::find(std::string_view key) const {
  auto it = kv_index_.find(std::string(key));
  return it == kv_index_.end() ? nullptr : &kvs_[it->second].value;
}

namespace {
[[noreturn]] void wrong_type(const std::string& file, std::string_view key, const Value& v,
                             const char* expected) {
  throw Error("gguf: " + file + ": key '" + display_name(key) + "' has type " +
              value_type_name(v.type) + ", expected " + expected);
}
}  // namespace

std::optional<std::string> GgufFile::get_string(std::string_view key) const {
  const Value* v = find(key);
  if (!v) return std::nullopt;
  if (const std::string* s = v->as_string()) return *s;
  wrong_type(name_, key, *v, "string");
}

std::optional<int64_t> GgufFile::get_int(std::string_view key) const {
  const Value* v = find(key);
  if (!v) return std::nullopt;
  if (auto x = v->as_int()) return x;
  if (v->is_integer())
    throw Error("gguf: " + name_ + ": key '" + display_name(key) + "' value does not fit in int64");
  wrong_type(name_, key, *v, "an integer");
}

std::optional<double> GgufFile::get_float(std::string_view key) const {
  const Value* v = find(key);
  if (!v) return std::nullopt;
  if (auto x = v->as_double()) return x;
  wrong_type(name_, key, *v, "a number");
}

std::optional<bool> GgufFile::get_bool(std::string_view key) const {
  const Value* v = find(key);
  if (!v) return std::nullopt;
  if (auto x = v->as_bool()) return x;
  wrong_type(name_, key, *v, "bool");
}

std::string GgufFile::get_string_or(std::string_view key, const std::string& def) const {
  auto x = get_string(key);
  return x ? *x : def;
}

int64_t GgufFile::get_int_or(std::string_view key, int64_t def) const {
  auto x = get_int(key);
  return x ? *x : def;
}

double GgufFile::get_float_or(std::string_view key, double def) const {
  auto x = get_float(key);
  return x ? *x : def;
}

const Array* GgufFile::get_array(std::string_view key) const {
  const Value* v = find(key);
  if (!v) return nullptr;
  if (const Array* a = v->as_array()) return a;
  wrong_type(name_, key, *v, "array");
}

const TensorInfo* GgufFile::find_tensor(std::string_view name) const {
  auto it = tensor_index_.find(std::string(name));
  return it == tensor_index_.end() ? nullptr : &tensors_[it->second];
}

std::span<const uint8_t> GgufFile::tensor_data(const TensorInfo& t) const {
  return bytes_.subspan(data_offset_ + (size_t)t.offset, t.n_bytes);
}

bool GgufFile::edit_loaded_tensors(const std::function<bool(const TensorInfo&)>& pick,
                                   const std::function<void(const TensorInfo&, uint8_t*)>& edit) {
  return map_.edit_loaded([&](uint8_t* base) {
    for (const TensorInfo& t : tensors_)
      if (pick(t)) edit(t, base + data_offset_ + (size_t)t.offset);
  });
}

}  // namespace oscar::gguf
