// Methods of str, list/tuple and dict reachable from templates
// (`s.startswith(...)`, `d.items()`, ...), with Python's semantics.
#include <algorithm>

#include "chat/builtins.h"
#include "chat/template_error.h"
#include "chat/unicode.h"

namespace oscar::chat::builtins {

BoundArgs::BoundArgs(const std::string& fn, CallArgs& args, std::initializer_list<const char*> names)
    : fn_(fn), names_(names.begin(), names.end()), vals_(names.size()) {
  if (args.args.size() > names_.size())
    throw_type_error(fn + "() takes at most " + std::to_string(names_.size()) + " argument(s) (" +
                     std::to_string(args.args.size()) + " given)");
  for (size_t i = 0; i < args.args.size(); ++i) vals_[i] = args.args[i];
  for (auto& [k, v] : args.kwargs) {
    auto it = std::find(names_.begin(), names_.end(), k);
    if (it == names_.end()) throw_type_error(fn + "() got an unexpected keyword argument '" + k + "'");
    const size_t i = static_cast<size_t>(it - names_.begin());
    if (vals_[i]) throw_type_error(fn + "() got multiple values for argument '" + k + "'");
    vals_[i] = v;
  }
}

const Value& BoundArgs::get(size_t i) const {
  if (!vals_[i]) throw_type_error(fn_ + "() missing required argument: '" + names_[i] + "'");
  return *vals_[i];
}

std::string py_strip(const std::string& s, const std::optional<std::string>& chars, bool left, bool right) {
  std::vector<char32_t> set;
  if (chars) {
    char32_t c;
    for (size_t i = 0; i < chars->size();) {
      i += unicode::decode(*chars, i, &c);
      set.push_back(c);
    }
  }
  auto strip_it = [&](char32_t c) {
    return chars ? std::find(set.begin(), set.end(), c) != set.end() : unicode::is_space(c);
  };
  const auto off = unicode::offsets(s);
  size_t b = 0, e = off.size() - 1;  // code point range [b, e)
  char32_t c;
  if (left)
    while (b < e && (unicode::decode(s, off[b], &c), strip_it(c))) ++b;
  if (right)
    while (e > b && (unicode::decode(s, off[e - 1], &c), strip_it(c))) --e;
  return s.substr(off[b], off[e] - off[b]);
}

std::vector<std::string> py_splitlines(const std::string& s) {
  std::vector<std::string> lines;
  std::string cur;
  char32_t c;
  for (size_t i = 0; i < s.size();) {
    const size_t n = unicode::decode(s, i, &c);
    const bool brk = c == '\n' || c == '\r' || c == 0x0B || c == 0x0C || (c >= 0x1C && c <= 0x1E) || c == 0x85 ||
                     c == 0x2028 || c == 0x2029;
    if (brk) {
      lines.push_back(std::move(cur));
      cur.clear();
      if (c == '\r' && i + 1 < s.size() && s[i + 1] == '\n') ++i;
    } else {
      cur.append(s, i, n);
    }
    i += n;
  }
  if (!cur.empty()) lines.push_back(std::move(cur));
  return lines;
}

namespace {

std::optional<std::string> opt_str(const BoundArgs& a, size_t i, const char* fn) {
  if (!a.has(i) || a.get(i).is_none()) return std::nullopt;
  if (!a.get(i).is_string()) throw_type_error(std::string(fn) + " arg must be None or str");
  return a.get(i).str();
}

const std::string& need_str(const Value& v, const char* what) {
  if (!v.is_string()) throw_type_error(std::string(what) + " must be str, not " + v.type_name());
  return v.str();
}

std::vector<std::string> split_ws(const std::string& s, int64_t maxsplit, bool from_right) {
  // Python str.split()/rsplit() without a separator.
  std::vector<std::pair<size_t, size_t>> words;  // byte ranges
  char32_t c;
  size_t i = 0;
  while (i < s.size()) {
    size_t n = unicode::decode(s, i, &c);
    if (unicode::is_space(c)) {
      i += n;
      continue;
    }
    const size_t start = i;
    while (i < s.size() && (n = unicode::decode(s, i, &c), !unicode::is_space(c))) i += n;
    words.emplace_back(start, i);
  }
  std::vector<std::string> out;
  if (maxsplit < 0 || static_cast<size_t>(maxsplit) + 1 >= words.size()) {
    for (auto [a, b] : words) out.push_back(s.substr(a, b - a));
    return out;
  }
  const size_t m = static_cast<size_t>(maxsplit);
  if (!from_right) {
    for (size_t k = 0; k < m; ++k) out.push_back(s.substr(words[k].first, words[k].second - words[k].first));
    out.push_back(py_strip(s.substr(words[m].first), std::nullopt, false, true));
  } else {
    const size_t first = words.size() - m;
    out.push_back(py_strip(s.substr(0, words[first - 1].second), std::nullopt, true, false));
    for (size_t k = first; k < words.size(); ++k)
      out.push_back(s.substr(words[k].first, words[k].second - words[k].first));
  }
  return out;
}

std::vector<std::string> split_sep(const std::string& s, const std::string& sep, int64_t maxsplit, bool from_right) {
  if (sep.empty()) throw_value_error("empty separator");
  std::vector<std::string> out;
  if (!from_right) {
    size_t pos = 0;
    for (int64_t k = 0; maxsplit < 0 || k < maxsplit; ++k) {
      const size_t f = s.find(sep, pos);
      if (f == std::string::npos) break;
      out.push_back(s.substr(pos, f - pos));
      pos = f + sep.size();
    }
    out.push_back(s.substr(pos));
    return out;
  }
  size_t end = s.size();
  for (int64_t k = 0; maxsplit < 0 || k < maxsplit; ++k) {
    if (end < sep.size()) break;
    const size_t f = s.rfind(sep, end - sep.size());
    if (f == std::string::npos) break;
    out.push_back(s.substr(f + sep.size(), end - f - sep.size()));
    end = f;
  }
  out.push_back(s.substr(0, end));
  std::reverse(out.begin(), out.end());
  return out;
}

Value str_list(std::vector<std::string> parts) {
  std::vector<Value> v;
  v.reserve(parts.size());
  for (auto& p : parts) v.emplace_back(std::move(p));
  return Value::make_list(std::move(v));
}

// Byte offset range of the code-point range [start, end) given Python-style
// optional start/end arguments.
std::pair<size_t, size_t> sub_range(const std::string& s, const BoundArgs& a, size_t si, size_t ei) {
  const auto off = unicode::offsets(s);
  const int64_t n = static_cast<int64_t>(off.size()) - 1;
  auto idx = [&](size_t i, int64_t dflt) {
    if (!a.has(i) || a.get(i).is_none()) return dflt;
    int64_t v = a.get(i).int_value();
    if (v < 0) v = std::max<int64_t>(0, v + n);
    return std::min(v, n);
  };
  const int64_t b = idx(si, 0), e = idx(ei, n);
  if (b > e) return {std::string::npos, std::string::npos};
  return {off[b], off[e]};
}

int64_t cp_index(const std::string& s, size_t byte_pos) {
  return static_cast<int64_t>(unicode::length(std::string_view(s).substr(0, byte_pos)));
}

std::string capitalize(const std::string& s) {
  std::string out;
  char32_t c;
  bool first = true;
  for (size_t i = 0; i < s.size();) {
    const size_t n = unicode::decode(s, i, &c);
    unicode::append(out, first ? unicode::to_upper(c) : unicode::to_lower(c));
    first = false;
    i += n;
  }
  return out;
}

// Python str.title(): upper after any non-cased character.
std::string py_title(const std::string& s) {
  std::string out;
  char32_t c;
  bool prev_cased = false;
  for (size_t i = 0; i < s.size();) {
    const size_t n = unicode::decode(s, i, &c);
    unicode::append(out, prev_cased ? unicode::to_lower(c) : unicode::to_upper(c));
    prev_cased = unicode::is_upper(c) || unicode::is_lower(c);
    i += n;
  }
  return out;
}

template <typename Pred>
bool all_chars(const std::string& s, Pred p) {
  if (s.empty()) return false;
  char32_t c;
  for (size_t i = 0; i < s.size(); i += unicode::decode(s, i, &c)) {
    unicode::decode(s, i, &c);
    if (!p(c)) return false;
  }
  return true;
}

std::string pad(const std::string& s, int64_t width, const std::string& fill, int where /*-1 left,0 center,1 right*/) {
  const int64_t len = static_cast<int64_t>(unicode::length(s));
  if (width <= len) return s;
  const int64_t total = width - len;
  int64_t left = where < 0 ? 0 : where > 0 ? total : total / 2 + (total & width & 1);
  std::string out;
  for (int64_t i = 0; i < left; ++i) out += fill;
  out += s;
  for (int64_t i = 0; i < total - left; ++i) out += fill;
  return out;
}

// One branch per Python str method, each a few lines: a dispatch table
// written as code (the shape of an opcode switch), kept whole so a method is
// found by its name in one place.
Value str_method(Interpreter& in, const std::string& s, const std::string& name, CallArgs& args) {
  if (name == "startswith" || name == "endswith") {
    BoundArgs a(name, args, {"prefix", "start", "end"});
    auto [b, e] = sub_range(s, a, 1, 2);
    if (b == std::string::npos) return Value(false);
    const std::string_view sub = std::string_view(s).substr(b, e - b);
    auto test = [&](const std::string& p) {
      if (p.size() > sub.size()) return false;
      return name == "startswith" ? sub.substr(0, p.size()) == p : sub.substr(sub.size() - p.size()) == p;
    };
    const Value& p = a.get(0);
    if (p.is_tuple()) {
      for (const Value& x : p.list().items)
        if (test(need_str(x, "tuple for startswith"))) return Value(true);
      return Value(false);
    }
    return Value(test(need_str(p, name.c_str())));
  }
  if (name == "split" || name == "rsplit") {
    BoundArgs a(name, args, {"sep", "maxsplit"});
    const int64_t maxsplit = a.get_or(1, Value(-1)).int_value();
    auto sep = opt_str(a, 0, name.c_str());
    auto parts = sep ? split_sep(s, *sep, maxsplit, name == "rsplit") : split_ws(s, maxsplit, name == "rsplit");
    in.count(static_cast<int64_t>(parts.size()));
    return str_list(std::move(parts));
  }
  if (name == "strip" || name == "lstrip" || name == "rstrip") {
    BoundArgs a(name, args, {"chars"});
    return Value(py_strip(s, opt_str(a, 0, name.c_str()), name != "rstrip", name != "lstrip"));
  }
  if (name == "upper") return Value(unicode::upper(s));
  if (name == "lower" || name == "casefold") return Value(unicode::lower(s));
  if (name == "title") return Value(py_title(s));
  if (name == "capitalize") return Value(capitalize(s));
  if (name == "replace") {
    BoundArgs a(name, args, {"old", "new", "count"});
    const std::string& from = need_str(a.get(0), "replace() argument 1");
    const std::string& to = need_str(a.get(1), "replace() argument 2");
    int64_t count = a.get_or(2, Value(-1)).int_value();
    std::string out;
    if (from.empty()) {
      const auto off = unicode::offsets(s);
      for (size_t i = 0; i + 1 < off.size(); ++i) {
        if (count-- != 0) out += to;
        out.append(s, off[i], off[i + 1] - off[i]);
      }
      if (count != 0) out += to;
    } else {
      size_t pos = 0;
      for (; count != 0; --count) {
        const size_t f = s.find(from, pos);
        if (f == std::string::npos) break;
        out.append(s, pos, f - pos);
        out += to;
        pos = f + from.size();
        in.check_size(out.size());
      }
      out.append(s, pos);
    }
    in.check_size(out.size());
    return Value(std::move(out));
  }
  if (name == "find" || name == "rfind" || name == "index" || name == "rindex" || name == "count") {
    BoundArgs a(name, args, {"sub", "start", "end"});
    const std::string& sub = need_str(a.get(0), "must be str");
    auto [b, e] = sub_range(s, a, 1, 2);
    int64_t result = -1;
    if (b != std::string::npos) {
      const std::string_view hay = std::string_view(s).substr(b, e - b);
      if (name == "count") {
        if (sub.empty()) return Value(static_cast<int64_t>(unicode::length(hay)) + 1);
        int64_t n = 0;
        for (size_t p = hay.find(sub); p != std::string_view::npos; p = hay.find(sub, p + sub.size())) ++n;
        return Value(n);
      }
      const size_t f = (name[0] == 'r') ? hay.rfind(sub) : hay.find(sub);
      if (f != std::string_view::npos) result = cp_index(s, b + f);
    } else if (name == "count") {
      return Value(int64_t{0});
    }
    if (result < 0 && (name == "index" || name == "rindex")) throw_value_error("substring not found");
    return Value(result);
  }
  if (name == "join") {
    BoundArgs a(name, args, {"iterable"});
    std::string out;
    size_t i = 0;
    for (const Value& v : py::iterate(a.get(0))) {
      if (!v.is_string())
        throw_type_error("sequence item " + std::to_string(i) + ": expected str instance, " + v.type_name() +
                         " found");
      if (i++) out += s;
      out += v.str();
      in.check_size(out.size());
    }
    return Value(std::move(out));
  }
  if (name == "format") return Value(str_format(in, s, args));
  if (name == "splitlines") return str_list(py_splitlines(s));
  if (name == "isdigit" || name == "isdecimal" || name == "isnumeric")
    return Value(all_chars(s, unicode::is_digit));
  if (name == "isalpha") return Value(all_chars(s, unicode::is_alpha));
  if (name == "isalnum") return Value(all_chars(s, [](char32_t c) { return unicode::is_alpha(c) || unicode::is_digit(c); }));
  if (name == "isspace") return Value(all_chars(s, unicode::is_space));
  if (name == "isupper" || name == "islower") {
    bool cased = false, ok = true;
    char32_t c;
    for (size_t i = 0; i < s.size(); i += unicode::decode(s, i, &c)) {
      unicode::decode(s, i, &c);
      if (unicode::is_upper(c)) {
        cased = true;
        ok &= name == "isupper";
      } else if (unicode::is_lower(c)) {
        cased = true;
        ok &= name == "islower";
      }
    }
    return Value(cased && ok);
  }
  if (name == "center" || name == "ljust" || name == "rjust") {
    BoundArgs a(name, args, {"width", "fillchar"});
    const int64_t w = a.get(0).int_value();
    in.check_size(static_cast<size_t>(std::max<int64_t>(w, 0)));
    const std::string fill = a.get_or(1, Value(" ")).to_str();
    return Value(pad(s, w, fill, name == "center" ? 0 : name == "ljust" ? -1 : 1));
  }
  if (name == "zfill") {
    BoundArgs a(name, args, {"width"});
    const int64_t w = a.get(0).int_value();
    in.check_size(static_cast<size_t>(std::max<int64_t>(w, 0)));
    const int64_t len = static_cast<int64_t>(unicode::length(s));
    if (w <= len) return Value(s);
    std::string zeros(static_cast<size_t>(w - len), '0');
    if (!s.empty() && (s[0] == '-' || s[0] == '+')) return Value(s.substr(0, 1) + zeros + s.substr(1));
    return Value(zeros + s);
  }
  if (name == "removeprefix" || name == "removesuffix") {
    BoundArgs a(name, args, {"affix"});
    const std::string& p = need_str(a.get(0), name.c_str());
    if (name == "removeprefix") return Value(s.compare(0, p.size(), p) == 0 ? s.substr(p.size()) : s);
    if (p.size() <= s.size() && s.compare(s.size() - p.size(), p.size(), p) == 0)
      return Value(s.substr(0, s.size() - p.size()));
    return Value(s);
  }
  if (name == "partition" || name == "rpartition") {
    BoundArgs a(name, args, {"sep"});
    const std::string& sep = need_str(a.get(0), name.c_str());
    if (sep.empty()) throw_value_error("empty separator");
    const size_t f = name == "partition" ? s.find(sep) : s.rfind(sep);
    if (f == std::string::npos) {
      if (name == "partition") return Value::make_list({Value(s), Value(""), Value("")}, true);
      return Value::make_list({Value(""), Value(""), Value(s)}, true);
    }
    return Value::make_list({Value(s.substr(0, f)), Value(sep), Value(s.substr(f + sep.size()))}, true);
  }
  throw_type_error("unknown str method " + name);
}

const char* const kStrMethods[] = {
    "startswith", "endswith", "split",     "rsplit",     "strip",        "lstrip",       "rstrip",  "upper",
    "lower",      "casefold", "title",     "capitalize", "replace",      "find",         "rfind",   "index",
    "rindex",     "count",    "join",      "format",     "splitlines",   "isdigit",      "isdecimal", "isnumeric",
    "isalpha",    "isalnum",  "isspace",   "isupper",    "islower",      "center",       "ljust",   "rjust",
    "zfill",      "removeprefix", "removesuffix", "partition", "rpartition"};
const char* const kListMethods[] = {"index", "count"};
const char* const kListMutators[] = {"append", "extend", "insert", "pop", "remove", "reverse", "sort", "clear"};
const char* const kDictMethods[] = {"get", "items", "keys", "values", "copy"};
const char* const kDictMutators[] = {"pop", "popitem", "setdefault", "update", "clear"};

template <size_t N>
bool in_list(const char* const (&names)[N], const std::string& n) {
  for (const char* x : names)
    if (n == x) return true;
  return false;
}

Value unsafe(const Value& obj, const std::string& name) {
  const std::string msg = "access to attribute '" + name + "' of '" + obj.type_name() + "' object is unsafe.";
  return Value::make_callable(name, [msg](Interpreter&, CallArgs&) -> Value { throw TemplateError("SecurityError", msg); });
}

Value dict_items(const DictData& d) {
  std::vector<Value> out;
  out.reserve(d.size());
  for (const auto& [k, v] : d.entries) out.push_back(Value::make_list({k, v}, true));
  return Value::make_list(std::move(out));
}

}  // namespace

std::optional<Value> method(const Value& obj, const std::string& name) {
  if (obj.is_string() && in_list(kStrMethods, name)) {
    const std::string s = obj.str();
    return Value::make_callable(name, [s, name](Interpreter& in, CallArgs& a) { return str_method(in, s, name, a); });
  }
  if (obj.is_list()) {
    if (in_list(kListMutators, name)) return unsafe(obj, name);
    if (!in_list(kListMethods, name)) return std::nullopt;
    return Value::make_callable(name, [obj, name](Interpreter&, CallArgs& args) -> Value {
      BoundArgs a(name, args, {"value"});
      const auto& items = obj.list().items;
      int64_t n = 0;
      for (size_t i = 0; i < items.size(); ++i) {
        if (!values_equal(items[i], a.get(0))) continue;
        if (name == "index") return Value(static_cast<int64_t>(i));
        ++n;
      }
      if (name == "index") throw_value_error(a.get(0).repr() + " is not in list");
      return Value(n);
    });
  }
  if (obj.is_mapping()) {
    if (in_list(kDictMutators, name)) return unsafe(obj, name);
    if (!in_list(kDictMethods, name)) return std::nullopt;
    return Value::make_callable(name, [obj, name](Interpreter&, CallArgs& args) -> Value {
      const DictData& d = obj.dict();
      if (name == "get") {
        BoundArgs a(name, args, {"key", "default"});
        const Value* v = d.find(a.get(0));
        return v ? *v : a.get_or(1, Value::none());
      }
      BoundArgs a(name, args, {});
      if (name == "items") return dict_items(d);
      if (name == "copy") {
        Value c = Value::make_dict();
        c.dict() = d;
        return c;
      }
      std::vector<Value> out;
      out.reserve(d.size());
      for (const auto& [k, v] : d.entries) out.push_back(name == "keys" ? k : v);
      return Value::make_list(std::move(out));
    });
  }
  return std::nullopt;
}

}  // namespace oscar::chat::builtins
