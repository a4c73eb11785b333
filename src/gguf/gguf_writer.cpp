#include "gguf/gguf_writer.h"

#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <limits>

#include "core/error.h"

namespace oscar::gguf {

namespace {

// Same limit as the reader, so whatever we write can be read back.
constexpr int kMaxArrayDepth = 16;
constexpr size_t kIoBuffer = 1 << 20;

template <class T>
void put(std::string& out, T x) {
  char b[sizeof(T)];
  std::memcpy(b, &x, sizeof(T));  // little-endian host, as the format
  out.append(b, sizeof(T));
}

void put_string(std::string& out, const std::string& s) {
  put<uint64_t>(out, s.size());
  out.append(s);
}

// Checks that `v` is internally consistent (the stored alternative matches the
// declared type, integers fit their width, array items have the element type)
// so that encoding it cannot silently change it. Returns an empty string when
// fine, else what is wrong.
std::string check_value(const Value& v, int depth) {
  const char* tn = value_type_name(v.type);
  auto bad = [&](const std::string& why) { return std::string(tn) + " value " + why; };
  switch (v.type) {
    case ValueType::UINT8:
    case ValueType::UINT16:
    case ValueType::UINT32:
    case ValueType::UINT64:
    case ValueType::BOOL: {
      const auto* u = std::get_if<uint64_t>(&v.v);
      if (!u) return bad("does not hold an unsigned integer");
      const uint64_t max = v.type == ValueType::UINT8    ? 0xff
                           : v.type == ValueType::UINT16 ? 0xffff
                           : v.type == ValueType::UINT32 ? 0xffffffffull
                           : v.type == ValueType::BOOL   ? 1
                                                         : ~0ull;
      if (*u > max) return bad(std::to_string(*u) + " is out of range");
      return {};
    }
    case ValueType::INT8:
    case ValueType::INT16:
    case ValueType::INT32:
    case ValueType::INT64: {
      const auto* i = std::get_if<int64_t>(&v.v);
      if (!i) return bad("does not hold a signed integer");
      const int bits = v.type == ValueType::INT8    ? 8
                       : v.type == ValueType::INT16 ? 16
                       : v.type == ValueType::INT32 ? 32
                                                    : 64;
      if (bits < 64) {
        const int64_t lim = int64_t(1) << (bits - 1);
        if (*i < -lim || *i >= lim) return bad(std::to_string(*i) + " is out of range");
      }
      return {};
    }
    case ValueType::FLOAT32:
    case ValueType::FLOAT64:
      if (!std::holds_alternative<double>(v.v)) return bad("does not hold a number");
      return {};
    case ValueType::STRING:
      if (!std::holds_alternative<std::string>(v.v)) return bad("does not hold a string");
      return {};
    case ValueType::ARRAY: {
      const Array* a = v.as_array();
      if (!a) return bad("does not hold an array");
      if (depth >= kMaxArrayDepth)
        return "arrays nested deeper than " + std::to_string(kMaxArrayDepth) + " levels";
      if ((uint32_t)a->elem_type > (uint32_t)ValueType::FLOAT64)
        return "array has unknown element type " + std::to_string((uint32_t)a->elem_type);
      for (size_t k = 0; k < a->items.size(); ++k) {
        const Value& item = a->items[k];
        if (item.type != a->elem_type)
          return "array element " + std::to_string(k) + " has type " +
                 value_type_name(item.type) + ", expected " + value_type_name(a->elem_type);
        std::string e = check_value(item, depth + 1);
        if (!e.empty()) return "array element " + std::to_string(k) + ": " + e;
      }
      return {};
    }
  }
  return "unknown value type " + std::to_string((uint32_t)v.type);
}

// Encodes the value body (no type tag for scalars; arrays carry their own
// element type and count). Values are pre-checked by check_value.
void put_value(std::string& out, const Value& v) {
  switch (v.type) {
    case ValueType::UINT8: put<uint8_t>(out, (uint8_t)std::get<uint64_t>(v.v)); break;
    case ValueType::UINT16: put<uint16_t>(out, (uint16_t)std::get<uint64_t>(v.v)); break;
    case ValueType::UINT32: put<uint32_t>(out, (uint32_t)std::get<uint64_t>(v.v)); break;
    case ValueType::UINT64: put<uint64_t>(out, std::get<uint64_t>(v.v)); break;
    case ValueType::BOOL: put<uint8_t>(out, (uint8_t)std::get<uint64_t>(v.v)); break;
    case ValueType::INT8: put<int8_t>(out, (int8_t)std::get<int64_t>(v.v)); break;
    case ValueType::INT16: put<int16_t>(out, (int16_t)std::get<int64_t>(v.v)); break;
    case ValueType::INT32: put<int32_t>(out, (int32_t)std::get<int64_t>(v.v)); break;
    case ValueType::INT64: put<int64_t>(out, std::get<int64_t>(v.v)); break;
    case ValueType::FLOAT32: put<float>(out, narrow_to_f32(std::get<double>(v.v))); break;
    case ValueType::FLOAT64: put<double>(out, std::get<double>(v.v)); break;
    case ValueType::STRING: put_string(out, std::get<std::string>(v.v)); break;
    case ValueType::ARRAY: {
      const Array* a = v.as_array();
      put<uint32_t>(out, (uint32_t)a->elem_type);
      put<uint64_t>(out, a->items.size());
      for (const Value& item : a->items) put_value(out, item);
      break;
    }
  }
}

}  // namespace

uint64_t encoded_value_size(const Value& v) {
  if (v.type == ValueType::STRING) {
    const std::string* s = v.as_string();
    return 8 + (s ? s->size() : 0);
  }
  if (v.type == ValueType::ARRAY) {
    uint64_t n = min_encoded_size(ValueType::ARRAY);
    if (const Array* a = v.as_array())
      for (const Value& item : a->items) n += encoded_value_size(item);
    return n;
  }
  return min_encoded_size(v.type);
}

GgufWriter::GgufWriter(std::string path, uint32_t version)
    : path_(std::move(path)), tmp_path_(path_ + ".tmp"), version_(version) {
  if (version_ != 2 && version_ != 3)
    throw Error("gguf writer: " + path_ + ": cannot write GGUF version " +
                std::to_string(version_) + " (only 2 and 3)");
}

GgufWriter::~GgufWriter() { abandon(); }

void GgufWriter::abandon() noexcept {
  if (out_) {
    std::fclose(out_);
    out_ = nullptr;
    ::unlink(tmp_path_.c_str());
  }
}

void GgufWriter::fail(const std::string& msg) {
  abandon();
  failed_ = true;
  throw Error("gguf writer: " + path_ + ": " + msg);
}

void GgufWriter::require_declaring(const char* what) const {
  if (begun_ || finished_ || failed_)
    throw Error("gguf writer: " + path_ + ": " + what +
                " after tensor data writing has begun");
}

void GgufWriter::add_kv(std::string key, Value value) {
  require_declaring("add_kv");
  auto err = [&](const std::string& m) { throw Error("gguf writer: " + path_ + ": " + m); };
  if (key.empty()) err("empty metadata key");
  if (keys_.count(key)) err("duplicate key '" + display_name(key) + "'");
  std::string bad = check_value(value, 0);
  if (!bad.empty()) err("key '" + display_name(key) + "': " + bad);
  if (key == "general.alignment") {
    if (value.type != ValueType::UINT32)
      err(std::string("general.alignment must be uint32, got ") + value_type_name(value.type));
    const uint64_t a = *value.as_uint();
    if (a == 0 || (a & (a - 1)) != 0)
      err("general.alignment " + std::to_string(a) + " is not a non-zero power of two");
    alignment_ = (size_t)a;
  }
  keys_.insert(key);
  kvs_.push_back({std::move(key), std::move(value)});
}

void GgufWriter::add_tensor(std::string name, TensorType type, std::vector<uint64_t> shape) {
  require_declaring("add_tensor");
  auto err = [&](const std::string& m) { throw Error("gguf writer: " + path_ + ": " + m); };
  if (name.empty()) err("empty tensor name");
  if (names_.count(name)) err("duplicate tensor name '" + display_name(name) + "'");
  const auto info = tensor_type_info((uint32_t)type);
  if (!info) err("tensor '" + display_name(name) + "' has unknown type " + std::to_string((uint32_t)type));
  if (shape.empty() || shape.size() > (size_t)kMaxDims)
    err("tensor '" + display_name(name) + "' has " + std::to_string(shape.size()) + " dimensions (must be 1.." +
        std::to_string(kMaxDims) + ")");
  uint64_t n = 1;
  for (size_t d = 0; d < shape.size(); ++d) {
    if (shape[d] == 0) err("tensor '" + display_name(name) + "' dimension " + std::to_string(d) + " is zero");
    if (shape[d] > (uint64_t)std::numeric_limits<int64_t>::max() / n)
      err("tensor '" + display_name(name) + "' element count overflows");
    n *= shape[d];
  }
  TensorInfo t;
  t.name = std::move(name);
  t.type = type;
  t.shape = std::move(shape);
  if (t.shape[0] % info->block_size != 0)
    err("tensor '" + display_name(t.name) + "' (" + info->name + "): row length " + std::to_string(t.shape[0]) +
        " is not a multiple of the block size " + std::to_string(info->block_size));
  const auto rb = row_bytes(type, t.shape[0]);
  const uint64_t rows = t.n_rows();
  if (!rb || rows > std::numeric_limits<size_t>::max() / *rb)
    err("tensor '" + display_name(t.name) + "' (" + info->name + ") byte size overflows");
  t.n_bytes = *rb * (size_t)rows;
  names_.insert(t.name);
  tensors_.push_back(std::move(t));
}

void GgufWriter::add_metadata_from(const GgufFile& src) {
  for (const auto& kv : src.metadata()) add_kv(kv.key, kv.value);
}

void GgufWriter::add_tensors_from(const GgufFile& src) {
  for (const auto& t : src.tensors()) add_tensor(t.name, t.type, t.shape);
}

size_t GgufWriter::bytes_left_in_current() const {
  return cur_ < tensors_.size() ? tensors_[cur_].n_bytes - cur_done_ : 0;
}

void GgufWriter::write_bytes(const void* p, size_t n) {
  if (n == 0) return;
  if (std::fwrite(p, 1, n, out_) != n)
    fail("write to '" + tmp_path_ + "' failed: " + std::strerror(errno));
  written_ += n;
}

void GgufWriter::write_padding() {
  static constexpr uint8_t kZeros[256] = {};
  uint64_t pad = (alignment_ - written_ % alignment_) % alignment_;
  while (pad > 0) {
    const size_t n = (size_t)std::min<uint64_t>(pad, sizeof kZeros);
    write_bytes(kZeros, n);
    pad -= n;
  }
}

void GgufWriter::begin() {
  if (failed_) throw Error("gguf writer: " + path_ + ": writer has already failed");
  if (finished_) throw Error("gguf writer: " + path_ + ": already finished");
  if (begun_) return;
  begun_ = true;

  // Final layout: tensors back to back in declared order, each aligned.
  uint64_t off = 0;
  for (auto& t : tensors_) {
    t.offset = off;
    const uint64_t padded = t.n_bytes + (alignment_ - t.n_bytes % alignment_) % alignment_;
    if (padded < t.n_bytes || off > std::numeric_limits<uint64_t>::max() - padded)
      fail("tensor data size overflows");
    off += padded;
  }

  std::string h;
  put<uint32_t>(h, kMagic);
  put<uint32_t>(h, version_);
  put<uint64_t>(h, tensors_.size());
  put<uint64_t>(h, kvs_.size());
  for (const auto& kv : kvs_) {
    put_string(h, kv.key);
    put<uint32_t>(h, (uint32_t)kv.value.type);
    put_value(h, kv.value);
  }
  for (const auto& t : tensors_) {
    put_string(h, t.name);
    put<uint32_t>(h, (uint32_t)t.shape.size());
    for (uint64_t d : t.shape) put<uint64_t>(h, d);
    put<uint32_t>(h, (uint32_t)t.type);
    put<uint64_t>(h, t.offset);
  }

  out_ = std::fopen(tmp_path_.c_str(), "wb");
  if (!out_) {
    failed_ = true;
    throw Error("gguf writer: cannot create '" + tmp_path_ + "': " + std::strerror(errno));
  }
  std::setvbuf(out_, nullptr, _IOFBF, kIoBuffer);
  write_bytes(h.data(), h.size());
  // A metadata-only file ends right after the header (as the vocab files
  // written by the reference tools do); otherwise data starts aligned.
  if (!tensors_.empty()) write_padding();
}

void GgufWriter::write_tensor_data(std::span<const uint8_t> chunk) {
  begin();
  if (cur_ >= tensors_.size())
    fail("got " + std::to_string(chunk.size()) + " bytes of tensor data after the last tensor");
  const TensorInfo& t = tensors_[cur_];
  const size_t left = t.n_bytes - cur_done_;
  if (chunk.size() > left)
    fail("chunk of " + std::to_string(chunk.size()) + " bytes overruns tensor '" + display_name(t.name) +
         "' (" + std::to_string(left) + " of its " + std::to_string(t.n_bytes) +
         " bytes left)");
  write_bytes(chunk.data(), chunk.size());
  cur_done_ += chunk.size();
  if (cur_done_ == t.n_bytes) {
    write_padding();
    ++cur_;
    cur_done_ = 0;
  }
}

void GgufWriter::write_tensor(std::string_view name, std::span<const uint8_t> data) {
  begin();
  if (cur_ >= tensors_.size())
    fail("tensor '" + display_name(name) + "' written after all declared tensors were complete");
  const TensorInfo& t = tensors_[cur_];
  if (t.name != name) {
    if (cur_done_ > 0)
      fail("tensor '" + display_name(t.name) + "' got only " + std::to_string(cur_done_) + " of its " +
           std::to_string(t.n_bytes) + " bytes before tensor '" + display_name(name) + "'");
    fail("tensor '" + display_name(name) + "' written out of order: '" + display_name(t.name) + "' is next");
  }
  if (cur_done_ > 0) fail("tensor '" + display_name(t.name) + "' was already partly written in chunks");
  if (data.size() != t.n_bytes)
    fail("tensor '" + display_name(t.name) + "' needs exactly " + std::to_string(t.n_bytes) + " bytes, got " +
         std::to_string(data.size()));
  write_tensor_data(data);
}

void GgufWriter::finish() {
  begin();
  if (cur_ < tensors_.size()) {
    const TensorInfo& t = tensors_[cur_];
    fail("tensor '" + display_name(t.name) + "' got " + std::to_string(cur_done_) + " of its " +
         std::to_string(t.n_bytes) + " bytes (" + std::to_string(tensors_.size() - cur_) +
         " tensor(s) incomplete)");
  }
  if (std::fflush(out_) != 0) fail("flush of '" + tmp_path_ + "' failed: " + std::strerror(errno));
  std::FILE* f = out_;
  out_ = nullptr;
  if (std::fclose(f) != 0) {
    const int e = errno;
    ::unlink(tmp_path_.c_str());
    failed_ = true;
    throw Error("gguf writer: " + path_ + ": close failed: " + std::strerror(e));
  }
  if (std::rename(tmp_path_.c_str(), path_.c_str()) != 0) {
    const int e = errno;
    ::unlink(tmp_path_.c_str());
    failed_ = true;
    throw Error("gguf writer: cannot rename '" + tmp_path_ + "' to '" + path_ +
                "': " + std::strerror(e));
  }
  finished_ = true;
}

void copy_gguf(const GgufFile& src, const std::string& dst_path) {
  GgufWriter w(dst_path, src.version());
  w.add_metadata_from(src);
  w.add_tensors_from(src);
  for (const auto& t : src.tensors()) w.write_tensor(t.name, src.tensor_data(t));
  w.finish();
}

}  // namespace oscar::gguf
