// Conversion between nlohmann JSON and template values, and a serializer
// that writes exactly what Python's json.dumps writes (transformers' tojson
// filter is json.dumps(x, ensure_ascii=False, indent, separators, sort_keys)).
#pragma once

#include <optional>
#include <string>
#include <string_view>

#include <nlohmann/json.hpp>

#include "chat/value.h"

namespace oscar::chat {

// Objects keep the JSON's key order (use ordered_json to keep the order the
// caller wrote; plain nlohmann::json has already sorted the keys).
Value value_from_json(const nlohmann::ordered_json& j);
Value value_from_json(const nlohmann::json& j);
// Parses JSON text from outside (model output, request fields) whose
// nesting stays within `max_depth`: returns a discarded value for malformed
// text and for text nested deeper, stopping at the first bracket too deep,
// so no deep value is ever built (and later copied or dumped recursively).
nlohmann::ordered_json parse_json_bounded(std::string_view text, int max_depth = 128);
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
