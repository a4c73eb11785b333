// The GGUF metadata value model: a typed value that may be a scalar, a string
// or a (possibly nested) array. Values read from a file keep their exact GGUF
// type so a writer can reproduce them byte for byte.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <variant>
#include <vector>

namespace oscar::gguf {

enum class ValueType : uint32_t {
  UINT8 = 0,
  INT8 = 1,
  UINT16 = 2,
  INT16 = 3,
  UINT32 = 4,
  INT32 = 5,
  FLOAT32 = 6,
  BOOL = 7,
  STRING = 8,
  ARRAY = 9,
  UINT64 = 10,
  INT64 = 11,
  FLOAT64 = 12,
};

const char* value_type_name(ValueType t);

// Bytes a value of type t takes in a file at least: exact for scalars, the
// length/header prefix for strings (u64 length) and arrays (u32 type + u64 count).
size_t min_encoded_size(ValueType t);

// A key or tensor name as shown inside a one-line error message: control
// bytes (a crafted name may hold a newline) are written as \xNN and very
// long names are cut.
std::string display_name(std::string_view s);

struct Value;

// float32 <-> the double a Value stores, bit-exact for every float including
// signalling NaNs (a hardware conversion would quiet them, and a copied file
// must keep its bytes).
double widen_f32(float x);
float narrow_to_f32(double x);

// An array: the element type plus the elements. Elements of scalar type are
// stored as Values of that type; nested arrays as Values of type ARRAY.
struct Array {
  ValueType elem_type = ValueType::UINT8;
  std::vector<Value> items;
};

struct Value {
  ValueType type = ValueType::UINT8;
  // Integers and bools live in u64 / i64 by signedness, floats in f64,
  // keeping the declared `type` for output.
  std::variant<uint64_t, int64_t, double, std::string, std::shared_ptr<Array>> v;

  static Value u8(uint8_t x) { return {ValueType::UINT8, (uint64_t)x}; }
  static Value i8(int8_t x) { return {ValueType::INT8, (int64_t)x}; }
  static Value u16(uint16_t x) { return {ValueType::UINT16, (uint64_t)x}; }
  static Value i16(int16_t x) { return {ValueType::INT16, (int64_t)x}; }
  static Value u32(uint32_t x) { return {ValueType::UINT32, (uint64_t)x}; }
  static Value i32(int32_t x) { return {ValueType::INT32, (int64_t)x}; }
  static Value u64(uint64_t x) { return {ValueType::UINT64, x}; }
  static Value i64(int64_t x) { return {ValueType::INT64, x}; }
  static Value f32(float x) { return {ValueType::FLOAT32, widen_f32(x)}; }
  static Value f64(double x) { return {ValueType::FLOAT64, x}; }
  static Value boolean(bool x) { return {ValueType::BOOL, (uint64_t)(x ? 1 : 0)}; }
  static Value str(std::string s) { return {ValueType::STRING, std::move(s)}; }
  static Value array(ValueType elem, std::vector<Value> items) {
    auto a = std::make_shared<Array>();
    a->elem_type = elem;
    a->items = std::move(items);
    return {ValueType::ARRAY, std::move(a)};
  }
  static Value string_array(const std::vector<std::string>& xs);
  static Value f32_array(const std::vector<float>& xs);
  static Value i32_array(const std::vector<int32_t>& xs);

  bool is_integer() const;  // any int type or bool
  bool is_float() const { return type == ValueType::FLOAT32 || type == ValueType::FLOAT64; }
  bool is_string() const { return type == ValueType::STRING; }
  bool is_array() const { return type == ValueType::ARRAY; }

  // Typed access; nullopt when the value is not of a compatible kind or the
  // integer does not fit.
  std::optional<int64_t> as_int() const;
  std::optional<uint64_t> as_uint() const;
  std::optional<double> as_double() const;  // ints and floats
  std::optional<bool> as_bool() const;
  const std::string* as_string() const;
  const Array* as_array() const;
};

struct KeyValue {
  std::string key;
  Value value;
};

}  // namespace oscar::gguf
