// oscar-gguf: inspect and verify GGUF files.
//   oscar-gguf info FILE [--json]   version, alignment, metadata, tensors, totals
//   oscar-gguf verify FILE          full structural validation; exit 0 only if valid
// Exit status: 0 success, 1 invalid/unreadable file, 2 usage error.
#include <charconv>
#include <cstdio>
#include <iostream>
#include <map>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "core/error.h"
#include "core/tensor_type.h"
#include "gguf/gguf_file.h"

namespace {

using namespace oscar;
using namespace oscar::gguf;
using json = nlohmann::ordered_json;

constexpr size_t kTextArrayItems = 8;   // array items shown in text mode
constexpr size_t kTextStringChars = 120;  // longest string shown in full

int usage(std::FILE* to) {
  std::fputs(
      "usage: oscar-gguf info FILE [--json]   show version, metadata and tensors\n"
      "       oscar-gguf verify FILE          validate the whole file (exit 0 only if valid)\n",
      to);
  return to == stdout ? 0 : 2;
}

// Length of the valid UTF-8 sequence starting at s[i], or 0 if invalid.
size_t utf8_len(const std::string& s, size_t i) {
  const unsigned char c = (unsigned char)s[i];
  size_t n;
  unsigned char lo = 0x80, hi = 0xbf;  // allowed range of the second byte
  if (c < 0x80) return 1;
  if (c >= 0xc2 && c <= 0xdf) n = 2;
  else if (c >= 0xe0 && c <= 0xef) {
    n = 3;
    if (c == 0xe0) lo = 0xa0;  // overlong
    if (c == 0xed) hi = 0x9f;  // surrogates
  } else if (c >= 0xf0 && c <= 0xf4) {
    n = 4;
    if (c == 0xf0) lo = 0x90;
    if (c == 0xf4) hi = 0x8f;
  } else {
    return 0;
  }
  if (i + n > s.size()) return 0;
  for (size_t k = 1; k < n; ++k) {
    const unsigned char d = (unsigned char)s[i + k];
    if (k == 1 ? (d < lo || d > hi) : (d < 0x80 || d > 0xbf)) return 0;
  }
  return n;
}

// A string as a quoted literal for the terminal: control characters and
// bytes that are not valid UTF-8 are escaped; cut after about `max` bytes.
std::string quote(const std::string& s, size_t max) {
  std::string out = "\"";
  size_t i = 0;
  while (i < s.size() && i < max) {
    const unsigned char c = (unsigned char)s[i];
    const size_t n = utf8_len(s, i);
    if (n > 1) {
      out.append(s, i, n);
      i += n;
      continue;
    }
    switch (c) {
      case '"': out += "\\\""; break;
      case '\\': out += "\\\\"; break;
      case '\n': out += "\\n"; break;
      case '\r': out += "\\r"; break;
      case '\t': out += "\\t"; break;
      default:
        if (n == 0 || c < 0x20 || c == 0x7f) {
          char b[8];
          std::snprintf(b, sizeof b, "\\x%02x", c);
          out += b;
        } else {
          out += (char)c;
        }
    }
    ++i;
  }
  out += "\"";
  if (i < s.size()) out += "... (" + std::to_string(s.size()) + " bytes)";
  return out;
}

// Shortest text that reads back as the same float32 / float64.
std::string number(double d, ValueType t) {
  char b[64];
  const auto r = t == ValueType::FLOAT32 ? std::to_chars(b, b + sizeof b, (float)d)
                                         : std::to_chars(b, b + sizeof b, d);
  return std::string(b, r.ptr);
}

std::string type_label(const Value& v) {
  if (!v.is_array()) return value_type_name(v.type);
  const Array* a = v.as_array();
  return std::string("array<") + value_type_name(a->elem_type) + ">[" +
         std::to_string(a->items.size()) + "]";
}

std::string text_value(const Value& v) {
  switch (v.type) {
    case ValueType::STRING: return quote(*v.as_string(), kTextStringChars);
    case ValueType::BOOL: return *v.as_bool() ? "true" : "false";
    case ValueType::FLOAT32:
    case ValueType::FLOAT64: return number(*v.as_double(), v.type);
    case ValueType::ARRAY: {
      const Array* a = v.as_array();
      std::string out = "[";
      const size_t n = std::min(a->items.size(), kTextArrayItems);
      for (size_t i = 0; i < n; ++i) {
        if (i) out += ", ";
        const Value& item = a->items[i];
        out += item.is_string() ? quote(*item.as_string(), 40) : text_value(item);
      }
      if (a->items.size() > n) out += ", ... " + std::to_string(a->items.size() - n) + " more";
      return out + "]";
    }
    default: {
      if (auto i = v.as_int()) return std::to_string(*i);
      return std::to_string(*v.as_uint());  // uint64 above INT64_MAX
    }
  }
}

json json_value(const Value& v) {
  switch (v.type) {
    case ValueType::STRING: return *v.as_string();
    case ValueType::BOOL: return *v.as_bool();
    case ValueType::FLOAT32:
    case ValueType::FLOAT64: return *v.as_double();  // NaN/inf become null
    case ValueType::ARRAY: {
      json arr = json::array();
      for (const Value& item : v.as_array()->items) arr.push_back(json_value(item));
      return arr;
    }
    default:
      if (const auto* u = std::get_if<uint64_t>(&v.v)) return *u;
      return std::get<int64_t>(v.v);
  }
}

std::string shape_str(const TensorInfo& t) {
  std::string s = "[";
  for (size_t i = 0; i < t.shape.size(); ++i) {
    if (i) s += ", ";
    s += std::to_string(t.shape[i]);
  }
  return s + "]";
}

struct Totals {
  uint64_t elements = 0, bytes = 0;
  std::map<std::string, size_t> by_type;  // type name -> tensor count
  std::vector<std::string> not_computable;
};

Totals totals(const GgufFile& f) {
  Totals t;
  for (const auto& ti : f.tensors()) {
    t.elements += ti.n_elements();
    t.bytes += ti.n_bytes;
    const auto& info = type_info(ti.type);
    if (t.by_type[info.name]++ == 0 && !info.computable) t.not_computable.push_back(info.name);
  }
  return t;
}

std::string mib(uint64_t bytes) {
  char b[32];
  std::snprintf(b, sizeof b, "%.2f MiB", (double)bytes / (1024.0 * 1024.0));
  return b;
}

int info_text(const GgufFile& f) {
  std::printf("file: %s\n", f.path().c_str());
  std::printf("version: %u  alignment: %zu  data offset: %zu  file size: %zu\n", f.version(),
              f.alignment(), f.data_offset(), f.file_size());
  std::printf("\nmetadata (%zu keys):\n", f.metadata().size());
  for (const auto& kv : f.metadata())
    std::printf("  %-40s %-20s %s\n", kv.key.c_str(), type_label(kv.value).c_str(),
                text_value(kv.value).c_str());
  std::printf("\ntensors (%zu):\n", f.tensors().size());
  if (!f.tensors().empty())
    std::printf("  %-40s %-8s %-26s %14s %14s\n", "name", "type", "shape", "bytes", "offset");
  for (const auto& t : f.tensors())
    std::printf("  %-40s %-8s %-26s %14zu %14llu\n", t.name.c_str(), type_name(t.type).c_str(),
                shape_str(t).c_str(), t.n_bytes, (unsigned long long)t.offset);
  const Totals tot = totals(f);
  std::printf("\ntotal: %zu tensors, %llu elements, %llu bytes of tensor data (%s)\n",
              f.tensors().size(), (unsigned long long)tot.elements,
              (unsigned long long)tot.bytes, mib(tot.bytes).c_str());
  if (!tot.by_type.empty()) {
    std::printf("by type:");
    for (const auto& [name, n] : tot.by_type) std::printf(" %s x %zu", name.c_str(), n);
    std::printf("\n");
  }
  return 0;
}

int info_json(const GgufFile& f) {
  json j;
  j["file"] = f.path();
  j["version"] = f.version();
  j["alignment"] = f.alignment();
  j["data_offset"] = f.data_offset();
  j["file_size"] = f.file_size();
  json md = json::array();
  for (const auto& kv : f.metadata()) {
    json e;
    e["key"] = kv.key;
    e["type"] = value_type_name(kv.value.type);
    if (const Array* a = kv.value.as_array()) e["elem_type"] = value_type_name(a->elem_type);
    e["value"] = json_value(kv.value);
    md.push_back(std::move(e));
  }
  j["metadata"] = std::move(md);
  json ts = json::array();
  for (const auto& t : f.tensors()) {
    json e;
    e["name"] = t.name;
    e["type"] = type_name(t.type);
    e["shape"] = t.shape;
    e["n_elements"] = t.n_elements();
    e["n_bytes"] = t.n_bytes;
    e["offset"] = t.offset;
    e["file_offset"] = f.data_offset() + t.offset;
    ts.push_back(std::move(e));
  }
  j["tensors"] = std::move(ts);
  const Totals tot = totals(f);
  j["totals"] = {{"tensors", f.tensors().size()},
                 {"elements", tot.elements},
                 {"bytes", tot.bytes},
                 {"by_type", tot.by_type}};
  // Metadata strings are not guaranteed to be UTF-8; replace bad bytes
  // rather than fail.
  std::cout << j.dump(2, ' ', false, json::error_handler_t::replace) << "\n";
  return 0;
}

int verify(const GgufFile& f) {
  // GgufFile::open has already validated the structure: counts, strings,
  // value types, alignment, tensor shapes/types/sizes, bounds, overlaps.
  const Totals tot = totals(f);
  std::string types;
  for (const auto& [name, n] : tot.by_type) {
    if (!types.empty()) types += ", ";
    types += name + " x " + std::to_string(n);
  }
  std::printf("OK %s: GGUF v%u, %zu keys, %zu tensors%s%s%s, %llu bytes of tensor data\n",
              f.path().c_str(), f.version(), f.metadata().size(), f.tensors().size(),
              types.empty() ? "" : " (", types.c_str(), types.empty() ? "" : ")",
              (unsigned long long)tot.bytes);
  if (!tot.not_computable.empty()) {
    std::string names;
    for (const auto& n : tot.not_computable) {
      if (!names.empty()) names += ", ";
      names += n;
    }
    std::printf("note: oscar can copy but not compute with tensor types: %s\n", names.c_str());
  }
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  std::vector<std::string> args(argv + 1, argv + argc);
  if (args.empty()) return usage(stderr);
  if (args[0] == "-h" || args[0] == "--help" || args[0] == "help") return usage(stdout);
  const std::string cmd = args[0];
  bool as_json = false;
  std::string file;
  for (size_t i = 1; i < args.size(); ++i) {
    if (args[i] == "--json" && cmd == "info") {
      as_json = true;
    } else if (!args[i].empty() && args[i][0] == '-' && args[i] != "-") {
      std::fprintf(stderr, "oscar-gguf: unknown option '%s'\n", args[i].c_str());
      return usage(stderr);
    } else if (file.empty()) {
      file = args[i];
    } else {
      std::fprintf(stderr, "oscar-gguf: more than one file given\n");
      return usage(stderr);
    }
  }
  if ((cmd != "info" && cmd != "verify") || file.empty()) return usage(stderr);

  try {
    const GgufFile f = GgufFile::open(file);
    if (cmd == "verify") return verify(f);
    return as_json ? info_json(f) : info_text(f);
  } catch (const oscar::Error& e) {
    std::fprintf(stderr, "%s\n", e.what());
    return 1;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "oscar-gguf: %s: %s\n", file.c_str(), e.what());
    return 1;
  }
}
