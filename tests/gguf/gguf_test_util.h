// Helpers shared by the GGUF tests: temp paths, file bytes, deep value
// comparison and a byte-level builder for hand-crafted (often malformed) files.
#pragma once

#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdint>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>
#include <vector>

#include "core/error.h"
#include "gguf/gguf_file.h"
#include "gguf/gguf_value.h"

// EXPECT_CONTAINS(text, fragment): the fragment occurs in the text.
#define EXPECT_CONTAINS(text, fragment)                                            \
  EXPECT_NE(std::string(text).find(fragment), std::string::npos)                   \
      << "expected to find: " << (fragment) << "\n                in: " << (text)

namespace oscar::gguf::test {

// A fresh directory per test case under the system temp dir.
inline std::filesystem::path temp_dir() {
  const auto* info = ::testing::UnitTest::GetInstance()->current_test_info();
  std::string name = std::string("oscar-gguf-") + std::to_string(::getpid()) + "-" +
                     (info ? std::string(info->test_suite_name()) + "." + info->name() : "x");
  for (char& c : name)
    if (c == '/') c = '_';
  auto dir = std::filesystem::temp_directory_path() / name;
  std::filesystem::remove_all(dir);
  std::filesystem::create_directories(dir);
  return dir;
}

inline std::vector<uint8_t> read_bytes(const std::filesystem::path& p) {
  std::ifstream in(p, std::ios::binary);
  return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

inline void write_bytes(const std::filesystem::path& p, const std::vector<uint8_t>& b) {
  std::ofstream out(p, std::ios::binary);
  out.write(reinterpret_cast<const char*>(b.data()), (std::streamsize)b.size());
}

// Deep equality including the exact GGUF types.
inline bool same_value(const Value& a, const Value& b) {
  if (a.type != b.type) return false;
  if (a.is_array()) {
    const Array* x = a.as_array();
    const Array* y = b.as_array();
    if (!x || !y || x->elem_type != y->elem_type || x->items.size() != y->items.size()) return false;
    for (size_t i = 0; i < x->items.size(); ++i)
      if (!same_value(x->items[i], y->items[i])) return false;
    return true;
  }
  if (a.is_float()) {
    double p = std::get<double>(a.v), q = std::get<double>(b.v);
    return std::memcmp(&p, &q, sizeof p) == 0;
  }
  return a.v == b.v;
}

// Parses `bytes` expecting failure; returns the message ("" if it parsed).
inline std::string parse_error(const std::vector<uint8_t>& bytes, const std::string& name = "t.gguf") {
  try {
    GgufFile::parse(bytes, name);
  } catch (const Error& e) {
    return e.what();
  }
  return "";
}

// Builds GGUF bytes field by field and records, for each field, the error the
// parser must report when the file is cut inside it. The parser reads
// strictly front to back, so the expected error for a truncation at length L
// is the first recorded check that L fails.
class Builder {
 public:
  struct Check {
    size_t need_end;   // the file must be at least this long ...
    std::string msg;   // ... or parsing reports this (L substituted by expect())
    enum Kind { kRead, kString, kCount } kind;
    size_t at = 0;     // offset the message names
    size_t from = 0;   // where "bytes left" is counted from
    uint64_t n = 0;    // size / string length
  };

  std::vector<uint8_t> b;
  std::vector<Check> checks;

  size_t pos() const { return b.size(); }

  template <class T>
  Builder& raw(T x) {
    uint8_t t[sizeof(T)];
    std::memcpy(t, &x, sizeof(T));
    b.insert(b.end(), t, t + sizeof(T));
    return *this;
  }
  // A fixed-size field, read as one unit named `what` by the parser.
  template <class T>
  Builder& field(T x, const std::string& what) {
    checks.push_back({pos() + sizeof(T), what, Check::kRead, pos(), pos(), sizeof(T)});
    return raw(x);
  }
  Builder& u32(uint32_t x, const std::string& what) { return field<uint32_t>(x, what); }
  Builder& u64(uint64_t x, const std::string& what) { return field<uint64_t>(x, what); }
  // A string: u64 length (field "<what> length") then the bytes.
  Builder& str(const std::string& s, const std::string& what) {
    const size_t at = pos();
    u64(s.size(), what + " length");
    checks.push_back({pos() + s.size(), what, Check::kString, at, pos(), s.size()});
    b.insert(b.end(), s.begin(), s.end());
    return *this;
  }
  // A plausibility check on a count: the bytes after `from` must be >= need.
  void count_check(size_t at, size_t from, uint64_t need, const std::string& msg) {
    checks.push_back({from + need, msg, Check::kCount, at, from, need});
  }
  Builder& header(uint32_t version, uint64_t n_tensors, uint64_t n_kv) {
    raw<uint32_t>(kMagic);
    raw<uint32_t>(version);
    u64(n_tensors, "tensor count");
    u64(n_kv, "metadata key/value count");
    count_check(8, 24, n_tensors * 33, "tensor count " + std::to_string(n_tensors) + " is impossible");
    count_check(16, 24, n_kv * 14, "metadata key/value count " + std::to_string(n_kv) + " is impossible");
    count_check(8, 24, n_kv * 14 + n_tensors * 33,
                "tensor count " + std::to_string(n_tensors) + " and key/value count " +
                    std::to_string(n_kv) + " cannot fit");
    return *this;
  }
  Builder& pad_to(size_t align) {
    while (b.size() % align) b.push_back(0);
    return *this;
  }
  Builder& zeros(size_t n) {
    b.insert(b.end(), n, 0);
    return *this;
  }

  // The error parse must give for the first `len` bytes ("" = none of the
  // recorded checks fails).
  std::string expect(size_t len) const {
    for (const auto& c : checks) {
      if (len >= c.need_end) continue;
      const size_t left = len - c.from;
      const std::string off = "offset " + std::to_string(c.at) + ": ";
      switch (c.kind) {
        case Check::kRead:
          return off + "truncated: " + c.msg + " needs " + std::to_string(c.n) + " bytes, " +
                 std::to_string(left) + " left";
        case Check::kString:
          return off + c.msg + " length " + std::to_string(c.n) + " exceeds the " +
                 std::to_string(left) + " bytes left in the file";
        case Check::kCount:
          return off + c.msg;
      }
    }
    return "";
  }
};

}  // namespace oscar::gguf::test

namespace oscar::gguf::test {

// Encoders for the metadata and tensor-info sections on top of Builder, with
// the field names the parser uses in its messages.
struct KvBuilder {
  Builder& B;
  int index = 0;

  // Key and type tag; returns the context name ("key 'k'").
  std::string begin(const std::string& key, ValueType t) {
    B.str(key, "key #" + std::to_string(index++));
    const std::string w = "key '" + key + "'";
    B.u32((uint32_t)t, w + " value type");
    return w;
  }
  template <class T>
  void scalar(const std::string& key, ValueType t, T x) {
    const std::string w = begin(key, t);
    B.field<T>(x, w);
  }
  void string(const std::string& key, const std::string& s) {
    const std::string w = begin(key, ValueType::STRING);
    B.str(s, w + " string");
  }
  // Array header inside context `w` (for nesting, w includes element paths).
  void array_header(const std::string& w, ValueType elem, uint64_t n, size_t min_size) {
    B.u32((uint32_t)elem, w + " array element type");
    const size_t at = B.pos();
    B.u64(n, w + " array length");
    B.count_check(at, B.pos(), n * min_size,
                  w + ": array of " + std::to_string(n) + " " + value_type_name(elem));
  }
  void u32_array(const std::string& key, const std::vector<uint32_t>& xs) {
    const std::string w = begin(key, ValueType::ARRAY);
    array_header(w, ValueType::UINT32, xs.size(), 4);
    for (size_t i = 0; i < xs.size(); ++i) B.field<uint32_t>(xs[i], w + " element " + std::to_string(i));
  }
  void string_array(const std::string& key, const std::vector<std::string>& xs) {
    const std::string w = begin(key, ValueType::ARRAY);
    array_header(w, ValueType::STRING, xs.size(), 8);
    for (size_t i = 0; i < xs.size(); ++i) B.str(xs[i], w + " element " + std::to_string(i) + " string");
  }
  // An array of arrays of int16.
  void nested_i16(const std::string& key, const std::vector<std::vector<int16_t>>& xs) {
    const std::string w = begin(key, ValueType::ARRAY);
    array_header(w, ValueType::ARRAY, xs.size(), 12);
    for (size_t i = 0; i < xs.size(); ++i) {
      const std::string wi = w + " element " + std::to_string(i);
      array_header(wi, ValueType::INT16, xs[i].size(), 2);
      for (size_t j = 0; j < xs[i].size(); ++j)
        B.field<int16_t>(xs[i][j], wi + " element " + std::to_string(j));
    }
  }
};

inline void tensor_info(Builder& B, int index, const std::string& name,
                        const std::vector<uint64_t>& shape, uint32_t type, uint64_t offset) {
  B.str(name, "tensor #" + std::to_string(index) + " name");
  const std::string w = "tensor '" + name + "'";
  B.u32((uint32_t)shape.size(), w + " n_dims");
  for (size_t d = 0; d < shape.size(); ++d) B.u64(shape[d], w + " dimension " + std::to_string(d));
  B.u32(type, w + " type");
  B.u64(offset, w + " offset");
}

}  // namespace oscar::gguf::test
