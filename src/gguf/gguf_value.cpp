#include "gguf/gguf_value.h"

#include <cstdio>
#include <cstring>
#include <limits>

namespace oscar::gguf {

const char* value_type_name(ValueType t) {
  switch (t) {
    case ValueType::UINT8: return "uint8";
    case ValueType::INT8: return "int8";
    case ValueType::UINT16: return "uint16";
    case ValueType::INT16: return "int16";
    case ValueType::UINT32: return "uint32";
    case ValueType::INT32: return "int32";
    case ValueType::FLOAT32: return "float32";
    case ValueType::BOOL: return "bool";
    case ValueType::STRING: return "string";
    case ValueType::ARRAY: return "array";
    case ValueType::UINT64: return "uint64";
    case ValueType::INT64: return "int64";
    case ValueType::FLOAT64: return "float64";
  }
  return "unknown";
}

double widen_f32(float x) {
  if (x == x) return (double)x;
  // NaN: move sign and payload bit for bit instead of converting.
  uint32_t f;
  std::memcpy(&f, &x, 4);
  const uint64_t d = (uint64_t)(f >> 31) << 63 | 0x7ffull << 52 | (uint64_t)(f & 0x7fffff) << 29;
  double r;
  std::memcpy(&r, &d, 8);
  return r;
}

float narrow_to_f32(double x) {
  if (x == x) return (float)x;
  uint64_t d;
  std::memcpy(&d, &x, 8);
  uint32_t f = (uint32_t)(d >> 63) << 31 | 0xffu << 23 | (uint32_t)((d >> 29) & 0x7fffff);
  if ((f & 0x7fffff) == 0) f |= 0x400000;  // payload lost below float precision: keep it a NaN
  float r;
  std::memcpy(&r, &f, 4);
  return r;
}

std::string display_name(std::string_view s) {
  constexpr size_t kMax = 96;
  std::string out;
  for (size_t i = 0; i < s.size() && i < kMax; ++i) {
    const unsigned char c = (unsigned char)s[i];
    if (c < 0x20 || c == 0x7f || c == '\\') {
      char b[8];
      std::snprintf(b, sizeof b, "\\x%02x", c);
      out += b;
    } else {
      out += (char)c;
    }
  }
  if (s.size() > kMax) out += "...";
  return out;
}

Value Value::string_array(const std::vector<std::string>& xs) {
  std::vector<Value> items;
  items.reserve(xs.size());
  for (const auto& s : xs) items.push_back(str(s));
  return array(ValueType::STRING, std::move(items));
}

Value Value::f32_array(const std::vector<float>& xs) {
  std::vector<Value> items;
  items.reserve(xs.size());
  for (float x : xs) items.push_back(f32(x));
  return array(ValueType::FLOAT32, std::move(items));
}

Value Value::i32_array(const std::vector<int32_t>& xs) {
  std::vector<Value> items;
  items.reserve(xs.size());
  for (int32_t x : xs) items.push_back(i32(x));
  return array(ValueType::INT32, std::move(items));
}

bool Value::is_integer() const {
  switch (type) {
    case ValueType::UINT8:
    case ValueType::INT8:
    case ValueType::UINT16:
    case ValueType::INT16:
    case ValueType::UINT32:
    case ValueType::INT32:
    case ValueType::UINT64:
    case ValueType::INT64:
    case ValueType::BOOL:
      return true;
    default:
      return false;
  }
}

std::optional<int64_t> Value::as_int() const {
  if (!is_integer()) return std::nullopt;
  if (const auto* u = std::get_if<uint64_t>(&v)) {
    if (*u > (uint64_t)std::numeric_limits<int64_t>::max()) return std::nullopt;
    return (int64_t)*u;
  }
  if (const auto* i = std::get_if<int64_t>(&v)) return *i;
  return std::nullopt;
}

std::optional<uint64_t> Value::as_uint() const {
  if (!is_integer()) return std::nullopt;
  if (const auto* u = std::get_if<uint64_t>(&v)) return *u;
  if (const auto* i = std::get_if<int64_t>(&v)) {
    if (*i < 0) return std::nullopt;
    return (uint64_t)*i;
  }
  return std::nullopt;
}

std::optional<double> Value::as_double() const {
  if (is_float()) {
    if (const auto* d = std::get_if<double>(&v)) return *d;
    return std::nullopt;
  }
  if (type == ValueType::BOOL || !is_integer()) return std::nullopt;
  if (const auto* u = std::get_if<uint64_t>(&v)) return (double)*u;
  if (const auto* i = std::get_if<int64_t>(&v)) return (double)*i;
  return std::nullopt;
}

std::optional<bool> Value::as_bool() const {
  if (type != ValueType::BOOL) return std::nullopt;
  if (const auto* u = std::get_if<uint64_t>(&v)) return *u != 0;
  return std::nullopt;
}

const std::string* Value::as_string() const {
  if (type != ValueType::STRING) return nullptr;
  return std::get_if<std::string>(&v);
}

const Array* Value::as_array() const {
  if (type != ValueType::ARRAY) return nullptr;
  const auto* p = std::get_if<std::shared_ptr<Array>>(&v);
  return p ? p->get() : nullptr;
}

size_t min_encoded_size(ValueType t) {
  switch (t) {
    case ValueType::UINT8:
    case ValueType::INT8:
    case ValueType::BOOL:
      return 1;
    case ValueType::UINT16:
    case ValueType::INT16:
      return 2;
    case ValueType::UINT32:
    case ValueType::INT32:
    case ValueType::FLOAT32:
      return 4;
    case ValueType::UINT64:
    case ValueType::INT64:
    case ValueType::FLOAT64:
    case ValueType::STRING:  // u64 length
      return 8;
    case ValueType::ARRAY:  // u32 type + u64 count
      return 12;
  }
  return 1;
}


}  // namespace oscar::gguf
