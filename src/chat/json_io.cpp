#include "chat/json_io.h"

#include <algorithm>
#include <cmath>
#include <cstdio>

#include "chat/template_error.h"
#include "chat/unicode.h"

namespace oscar::chat {

namespace {

constexpr int kMaxDepth = 512;

template <typename J>
Value from_json_impl(const J& j, int depth) {
  if (depth > kMaxDepth) throw_limit_error("JSON nesting deeper than " + std::to_string(kMaxDepth));
  switch (j.type()) {
    case nlohmann::json::value_t::null:
      return Value::none();
    case nlohmann::json::value_t::boolean:
      return Value(j.template get<bool>());
    case nlohmann::json::value_t::number_integer:
      return Value(j.template get<int64_t>());
    case nlohmann::json::value_t::number_unsigned: {
      const auto u = j.template get<uint64_t>();
      if (u > static_cast<uint64_t>(INT64_MAX)) return Value(static_cast<double>(u));
      return Value(static_cast<int64_t>(u));
    }
    case nlohmann::json::value_t::number_float:
      return Value(j.template get<double>());
    case nlohmann::json::value_t::string:
      return Value(j.template get<std::string>());
    case nlohmann::json::value_t::array: {
      std::vector<Value> items;
      items.reserve(j.size());
      for (const auto& e : j) items.push_back(from_json_impl(e, depth + 1));
      return Value::make_list(std::move(items));
    }
    case nlohmann::json::value_t::object: {
      Value d = Value::make_dict();
      for (auto it = j.begin(); it != j.end(); ++it) d.dict().set(Value(it.key()), from_json_impl(it.value(), depth + 1));
      return d;
    }
    default:
      return Value::none();
  }
}

nlohmann::ordered_json to_json_impl(const Value& v, int depth) {
  if (depth > kMaxDepth) throw_limit_error("value nesting deeper than " + std::to_string(kMaxDepth));
  switch (v.kind()) {
    case Value::Kind::None:
      return nullptr;
    case Value::Kind::Bool:
      return v.as_bool();
    case Value::Kind::Int:
      return v.as_int();
    case Value::Kind::Float:
      return v.as_float();
    case Value::Kind::String:
      return v.str();
    case Value::Kind::List: {
      auto a = nlohmann::ordered_json::array();
      for (const Value& e : v.list().items) a.push_back(to_json_impl(e, depth + 1));
      return a;
    }
    case Value::Kind::Dict:
      if (v.dict().type == DictData::Type::Dict) {
        auto o = nlohmann::ordered_json::object();
        for (const auto& [k, e] : v.dict().entries) o[k.to_str()] = to_json_impl(e, depth + 1);
        return o;
      }
      break;
    default:
      break;
  }
  throw_type_error("Object of type " + v.type_name() + " is not JSON serializable");
}

// json.dumps turns non-string keys into strings this way.
std::string key_string(const Value& k) {
  switch (k.kind()) {
    case Value::Kind::String:
      return k.str();
    case Value::Kind::Bool:
      return k.as_bool() ? "true" : "false";
    case Value::Kind::None:
      return "null";
    case Value::Kind::Int:
      return std::to_string(k.as_int());
    case Value::Kind::Float:
      return format_float(k.as_float());
    default:
      throw_type_error("keys must be str, int, float, bool or None, not " + k.type_name());
  }
}

struct Dumper {
  const JsonDumpOptions& opt;
  std::string out;

  void newline(int level) {
    out += '\n';
    for (int i = 0; i < level; ++i) out += *opt.indent;
  }

  void dump(const Value& v, int level) {
    if (level > kMaxDepth) throw_value_error("Circular reference detected");
    const std::string item_sep = opt.item_separator ? *opt.item_separator : (opt.indent ? "," : ", ");
    switch (v.kind()) {
      case Value::Kind::None:
        out += "null";
        return;
      case Value::Kind::Bool:
        out += v.as_bool() ? "true" : "false";
        return;
      case Value::Kind::Int:
        out += std::to_string(v.as_int());
        return;
      case Value::Kind::Float: {
        const double d = v.as_float();
        if (std::isnan(d))
          out += "NaN";
        else if (std::isinf(d))
          out += d < 0 ? "-Infinity" : "Infinity";
        else
          out += format_float(d);
        return;
      }
      case Value::Kind::String:
        append_json_string(out, v.str(), opt.ensure_ascii);
        return;
      case Value::Kind::List: {
        const auto& items = v.list().items;
        if (items.empty()) {
          out += "[]";
          return;
        }
        out += '[';
        for (size_t i = 0; i < items.size(); ++i) {
          if (i) out += item_sep;
          if (opt.indent) newline(level + 1);
          dump(items[i], level + 1);
        }
        if (opt.indent) newline(level);
        out += ']';
        return;
      }
      case Value::Kind::Dict: {
        const DictData& d = v.dict();
        if (d.type != DictData::Type::Dict) break;
        if (d.entries.empty()) {
          out += "{}";
          return;
        }
        std::vector<const std::pair<Value, Value>*> order;
        for (const auto& e : d.entries) order.push_back(&e);
        if (opt.sort_keys)
          std::stable_sort(order.begin(), order.end(),
                           [](auto* a, auto* b) { return compare_values(a->first, b->first) < 0; });
        out += '{';
        for (size_t i = 0; i < order.size(); ++i) {
          if (i) out += item_sep;
          if (opt.indent) newline(level + 1);
          append_json_string(out, key_string(order[i]->first), opt.ensure_ascii);
          out += opt.key_separator;
          dump(order[i]->second, level + 1);
        }
        if (opt.indent) newline(level);
        out += '}';
        return;
      }
      default:
        break;
    }
    throw_type_error("Object of type " + v.type_name() + " is not JSON serializable");
  }
};

}  // namespace

nlohmann::ordered_json parse_json_bounded(std::string_view text, int max_depth) {
  using J = nlohmann::ordered_json;
  struct TooDeep {};
  const J::parser_callback_t limit = [max_depth](int depth, J::parse_event_t event, J&) {
    if ((event == J::parse_event_t::object_start || event == J::parse_event_t::array_start) && depth >= max_depth)
      throw TooDeep{};
    return true;
  };
  try {
    return J::parse(text.begin(), text.end(), limit, /*allow_exceptions=*/false);
  } catch (const TooDeep&) {
    return J(J::value_t::discarded);
  }
}

Value value_from_json(const nlohmann::ordered_json& j) { return from_json_impl(j, 0); }
Value value_from_json(const nlohmann::json& j) { return from_json_impl(j, 0); }
nlohmann::ordered_json value_to_json(const Value& v) { return to_json_impl(v, 0); }

void append_json_string(std::string& out, std::string_view s, bool ensure_ascii) {
  out += '"';
  char32_t cp;
  for (size_t i = 0; i < s.size();) {
    const size_t n = unicode::decode(s, i, &cp);
    char buf[16];
    switch (cp) {
      case '"':
        out += "\\\"";
        break;
      case '\\':
        out += "\\\\";
        break;
      case '\n':
        out += "\\n";
        break;
      case '\r':
        out += "\\r";
        break;
      case '\t':
        out += "\\t";
        break;
      case '\b':
        out += "\\b";
        break;
      case '\f':
        out += "\\f";
        break;
      default:
        if (cp < 0x20) {
          std::snprintf(buf, sizeof(buf), "\\u%04x", static_cast<unsigned>(cp));
          out += buf;
        } else if (ensure_ascii && cp >= 0x7F) {  // Python escapes DEL too
          if (cp >= 0x10000) {
            const char32_t v = cp - 0x10000;
            std::snprintf(buf, sizeof(buf), "\\u%04x\\u%04x", static_cast<unsigned>(0xD800 + (v >> 10)),
                          static_cast<unsigned>(0xDC00 + (v & 0x3FF)));
          } else {
            std::snprintf(buf, sizeof(buf), "\\u%04x", static_cast<unsigned>(cp));
          }
          out += buf;
        } else {
          out.append(s.substr(i, n));
        }
    }
    i += n;
  }
  out += '"';
}

std::string dump_json(const Value& v, const JsonDumpOptions& opt) {
  Dumper d{opt, {}};
  d.dump(v, 0);
  return std::move(d.out);
}

}  // namespace oscar::chat
