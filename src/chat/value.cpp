#include "chat/value.h"

#include <charconv>
#include <cmath>
#include <cstdio>

#include "chat/template_error.h"
#include "chat/unicode.h"

namespace oscar::chat {

namespace {

// Containers deeper than this are refused by repr/compare: a namespace that
// contains itself would otherwise recurse forever.
constexpr int kMaxDepth = 512;

void check_depth(int depth) {
  if (depth > kMaxDepth) throw_limit_error("value nesting deeper than " + std::to_string(kMaxDepth));
}

void repr_into(const Value& v, std::string& out, int depth);

void repr_seq(const std::vector<Value>& items, std::string& out, int depth) {
  for (size_t i = 0; i < items.size(); ++i) {
    if (i) out += ", ";
    repr_into(items[i], out, depth + 1);
  }
}

void repr_dict_body(const DictData& d, std::string& out, int depth) {
  out += '{';
  for (size_t i = 0; i < d.entries.size(); ++i) {
    if (i) out += ", ";
    repr_into(d.entries[i].first, out, depth + 1);
    out += ": ";
    repr_into(d.entries[i].second, out, depth + 1);
  }
  out += '}';
}

void repr_into(const Value& v, std::string& out, int depth) {
  check_depth(depth);
  switch (v.kind()) {
    case Value::Kind::String:
      out += repr_string(v.str());
      return;
    case Value::Kind::List: {
      const ListData& l = v.list();
      out += l.is_tuple ? '(' : '[';
      repr_seq(l.items, out, depth);
      if (l.is_tuple && l.items.size() == 1) out += ',';
      out += l.is_tuple ? ')' : ']';
      return;
    }
    case Value::Kind::Dict: {
      const DictData& d = v.dict();
      if (d.type == DictData::Type::Namespace) {
        out += "<Namespace ";
        repr_dict_body(d, out, depth);
        out += '>';
      } else if (d.type == DictData::Type::Loop) {
        out += "<LoopContext>";
      } else {
        repr_dict_body(d, out, depth);
      }
      return;
    }
    case Value::Kind::Undefined:
      out += "Undefined";
      return;
    default:
      out += v.to_str();
  }
}

}  // namespace

const Value* DictData::find(const Value& key) const {
  auto it = index.find(dict_key(key));
  return it == index.end() ? nullptr : &entries[it->second].second;
}

const Value* DictData::find_str(std::string_view key) const {
  std::string k;
  k.reserve(key.size() + 1);
  k += 's';
  k += key;
  auto it = index.find(k);
  return it == index.end() ? nullptr : &entries[it->second].second;
}

void DictData::set(const Value& key, Value v) {
  std::string k = dict_key(key);
  auto it = index.find(k);
  if (it != index.end()) {
    entries[it->second].second = std::move(v);
    return;
  }
  index.emplace(std::move(k), entries.size());
  entries.emplace_back(key, std::move(v));
}

Value Value::make_list(std::vector<Value> items, bool tuple) {
  Value v;
  auto d = std::make_shared<ListData>();
  d->items = std::move(items);
  d->is_tuple = tuple;
  v.v_ = std::move(d);
  return v;
}

Value Value::make_dict(DictType type) {
  Value v;
  auto d = std::make_shared<DictData>();
  d->type = type;
  v.v_ = std::move(d);
  return v;
}

Value Value::make_callable(std::string name, NativeFn fn, bool is_macro) {
  Value v;
  auto d = std::make_shared<CallableData>();
  d->name = std::move(name);
  d->fn = std::move(fn);
  d->is_macro = is_macro;
  v.v_ = std::move(d);
  return v;
}

int64_t Value::int_value() const {
  if (is_int()) return as_int();
  if (is_bool()) return as_bool() ? 1 : 0;
  if (is_undefined()) throw_undefined_error(undefined_hint());
  throw_type_error("'" + type_name() + "' object cannot be interpreted as an integer");
}

double Value::number() const {
  if (is_float()) return as_float();
  return static_cast<double>(int_value());
}

const void* Value::identity() const {
  switch (kind()) {
    case Kind::List:
      return &list();
    case Kind::Dict:
      return &dict();
    case Kind::Callable:
      return &fn();
    default:
      return nullptr;
  }
}

bool Value::truthy() const {
  switch (kind()) {
    case Kind::Undefined:
    case Kind::None:
      return false;
    case Kind::Bool:
      return as_bool();
    case Kind::Int:
      return as_int() != 0;
    case Kind::Float:
      return as_float() != 0.0;
    case Kind::String:
      return !str().empty();
    case Kind::List:
      return !list().items.empty();
    case Kind::Dict:
      // A namespace/loop object is always true, like any Python object.
      return dict().type != DictData::Type::Dict || !dict().entries.empty();
    case Kind::Callable:
      return true;
  }
  return false;
}

std::string Value::to_str() const {
  switch (kind()) {
    case Kind::Undefined:
      return "";
    case Kind::None:
      return "None";
    case Kind::Bool:
      return as_bool() ? "True" : "False";
    case Kind::Int:
      return std::to_string(as_int());
    case Kind::Float:
      return format_float(as_float());
    case Kind::String:
      return str();
    case Kind::Callable:
      return fn().is_macro ? "<Macro '" + fn().name + "'>" : "<built-in function " + fn().name + ">";
    default:
      return repr();
  }
}

std::string Value::repr() const {
  std::string out;
  repr_into(*this, out, 0);
  return out;
}

std::string Value::type_name() const {
  switch (kind()) {
    case Kind::Undefined:
      return "Undefined";
    case Kind::None:
      return "NoneType";
    case Kind::Bool:
      return "bool";
    case Kind::Int:
      return "int";
    case Kind::Float:
      return "float";
    case Kind::String:
      return "str";
    case Kind::List:
      return list().is_tuple ? "tuple" : "list";
    case Kind::Dict:
      switch (dict().type) {
        case DictData::Type::Namespace:
          return "Namespace";
        case DictData::Type::Loop:
          return "LoopContext";
        default:
          return "dict";
      }
    case Kind::Callable:
      return fn().is_macro ? "Macro" : "builtin_function_or_method";
  }
  return "object";
}

std::string format_float(double d) {
  if (std::isnan(d)) return "nan";
  if (std::isinf(d)) return d < 0 ? "-inf" : "inf";
  if (d == 0.0) return std::signbit(d) ? "-0.0" : "0.0";
  // Shortest round-trip digits in scientific form, e.g. "1.2345e+02".
  char buf[64];
  auto res = std::to_chars(buf, buf + sizeof(buf), d, std::chars_format::scientific);
  std::string sci(buf, res.ptr);
  std::string out;
  if (sci[0] == '-') {
    out += '-';
    sci.erase(0, 1);
  }
  const size_t epos = sci.find('e');
  std::string digits;
  for (size_t i = 0; i < epos; ++i)
    if (sci[i] != '.') digits += sci[i];
  const int exp = std::stoi(sci.substr(epos + 1));
  if (exp < -4 || exp >= 16) {
    out += digits[0];
    if (digits.size() > 1) out += "." + digits.substr(1);
    char eb[16];
    std::snprintf(eb, sizeof(eb), "e%c%02d", exp < 0 ? '-' : '+', exp < 0 ? -exp : exp);
    out += eb;
  } else if (exp >= 0) {
    const size_t int_len = static_cast<size_t>(exp) + 1;
    if (digits.size() <= int_len) {
      out += digits + std::string(int_len - digits.size(), '0') + ".0";
    } else {
      out += digits.substr(0, int_len) + "." + digits.substr(int_len);
    }
  } else {
    out += "0." + std::string(static_cast<size_t>(-exp - 1), '0') + digits;
  }
  return out;
}

std::string repr_string(std::string_view s) {
  const bool has_single = s.find('\'') != std::string_view::npos;
  const bool has_double = s.find('"') != std::string_view::npos;
  const char quote = (has_single && !has_double) ? '"' : '\'';
  std::string out(1, quote);
  char32_t cp;
  for (size_t i = 0; i < s.size();) {
    const size_t n = unicode::decode(s, i, &cp);
    const bool invalid = cp == 0xFFFD && n == 1 && static_cast<unsigned char>(s[i]) >= 0x80;
    if (invalid) {
      out += s[i];
    } else if (cp == '\\') {
      out += "\\\\";
    } else if (cp == static_cast<char32_t>(quote)) {
      out += '\\';
      out += quote;
    } else if (cp == '\n') {
      out += "\\n";
    } else if (cp == '\r') {
      out += "\\r";
    } else if (cp == '\t') {
      out += "\\t";
    } else if (!unicode::is_printable(cp)) {
      char b[16];
      if (cp < 0x100)
        std::snprintf(b, sizeof(b), "\\x%02x", static_cast<unsigned>(cp));
      else if (cp < 0x10000)
        std::snprintf(b, sizeof(b), "\\u%04x", static_cast<unsigned>(cp));
      else
        std::snprintf(b, sizeof(b), "\\U%08x", static_cast<unsigned>(cp));
      out += b;
    } else {
      out.append(s.substr(i, n));
    }
    i += n;
  }
  out += quote;
  return out;
}

std::string dict_key(const Value& key) {
  switch (key.kind()) {
    case Value::Kind::String:
      return "s" + key.str();
    case Value::Kind::Int:
    case Value::Kind::Bool:
      return "n" + std::to_string(key.int_value());
    case Value::Kind::Float: {
      const double d = key.as_float();
      if (std::floor(d) == d && std::fabs(d) < 9.2e18) return "n" + std::to_string(static_cast<int64_t>(d));
      return "f" + format_float(d);
    }
    case Value::Kind::None:
      return "z";
    case Value::Kind::List:
      if (key.is_tuple()) {
        std::string k = "t(";
        for (const Value& v : key.list().items) k += dict_key(v) + ",";
        return k + ")";
      }
      break;
    default:
      break;
  }
  throw_type_error("unhashable type: '" + key.type_name() + "'");
}

namespace {

bool equal_impl(const Value& a, const Value& b, int depth) {
  check_depth(depth);
  if (a.is_number() && b.is_number()) {
    if (!a.is_float() && !b.is_float()) return a.int_value() == b.int_value();
    return a.number() == b.number();
  }
  if (a.kind() != b.kind()) return false;
  switch (a.kind()) {
    case Value::Kind::Undefined:
    case Value::Kind::None:
      return true;
    case Value::Kind::String:
      return a.str() == b.str();
    case Value::Kind::List: {
      const ListData& x = a.list();
      const ListData& y = b.list();
      if (x.is_tuple != y.is_tuple || x.items.size() != y.items.size()) return false;
      for (size_t i = 0; i < x.items.size(); ++i)
        if (!equal_impl(x.items[i], y.items[i], depth + 1)) return false;
      return true;
    }
    case Value::Kind::Dict: {
      const DictData& x = a.dict();
      const DictData& y = b.dict();
      if (x.type != DictData::Type::Dict || y.type != DictData::Type::Dict) return &x == &y;
      if (x.size() != y.size()) return false;
      for (const auto& [k, v] : x.entries) {
        const Value* o = y.find(k);
        if (!o || !equal_impl(v, *o, depth + 1)) return false;
      }
      return true;
    }
    case Value::Kind::Callable:
      return &a.fn() == &b.fn();
    default:
      return false;
  }
}

int compare_impl(const Value& a, const Value& b, int depth) {
  check_depth(depth);
  if (a.is_number() && b.is_number()) {
    if (!a.is_float() && !b.is_float()) {
      const int64_t x = a.int_value(), y = b.int_value();
      return x < y ? -1 : (x > y ? 1 : 0);
    }
    const double x = a.number(), y = b.number();
    return x < y ? -1 : (x > y ? 1 : 0);
  }
  if (a.is_string() && b.is_string()) {
    // Byte order of UTF-8 is code point order, as Python compares str.
    const int c = a.str().compare(b.str());
    return c < 0 ? -1 : (c > 0 ? 1 : 0);
  }
  if (a.is_list() && b.is_list() && a.is_tuple() == b.is_tuple()) {
    const auto& x = a.list().items;
    const auto& y = b.list().items;
    for (size_t i = 0; i < x.size() && i < y.size(); ++i) {
      if (equal_impl(x[i], y[i], depth + 1)) continue;
      return compare_impl(x[i], y[i], depth + 1);
    }
    return x.size() < y.size() ? -1 : (x.size() > y.size() ? 1 : 0);
  }
  throw_type_error("'<' not supported between instances of '" + a.type_name() + "' and '" + b.type_name() +
                   "'");
}

}  // namespace

bool values_equal(const Value& a, const Value& b) { return equal_impl(a, b, 0); }
int compare_values(const Value& a, const Value& b) { return compare_impl(a, b, 0); }

}  // namespace oscar::chat
