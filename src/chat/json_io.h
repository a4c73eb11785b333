// Conversion between nlohmann JSON and template values, and a serializer
// that writes exactly what Python's json.dumps writes (transformers' tojson
// filter is json.dumps(x, ensure_ascii=False, indent, separators, sort_keys)).
#pragma once

#include <optional>
#include <string>

#include <nlohmann/json.hpp>

#include "chat/value.h"

namespace oscar::chat {

// Objects keep the JSON's key order (use ordered_json to keep the order the
// caller wrote; plain nlohmann::json has already sorted the keys).
Value value_from_json(const nlohmann::ordered_json& j);
Value value_from_json(const nlohmann::json& j);
// The reverse, for callers that want structured data back (tuples become
// arrays); throws TypeError for values JSON cannot hold.
nlohmann::ordered_json value_to_json(const Value& v);

struct JsonDumpOptions {
  std::optional<std::string> indent;  // None: one line
  std::optional<std::string> item_separator;  // default ", " (or "," with indent)
  std::string key_separator = ": ";
  bool sort_keys = false;
  bool ensure_ascii = false;
};

// Python json.dumps(v, ...). Throws TypeError for undefined, callables and
// namespaces, like Python does for objects it cannot serialize.
std::string dump_json(const Value& v, const JsonDumpOptions& opt);
// Python json string literal for s.
void append_json_string(std::string& out, std::string_view s, bool ensure_ascii);

}  // namespace oscar::chat
