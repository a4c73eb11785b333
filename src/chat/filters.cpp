// jinja2's built-in filters (jinja2/filters.py, 3.1) plus transformers'
// tojson override. Generators in jinja2 (map, select, reverse, ...) return
// lists here; they print differently only when printed unconverted, which
// jinja2 renders as "<generator object ...>" anyway.
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <unordered_map>
#include <unordered_set>

#include "chat/builtins.h"
#include "chat/json_io.h"
#include "chat/operators.h"
#include "chat/template_error.h"
#include "chat/unicode.h"

namespace oscar::chat::builtins {

namespace {

using FilterFn = Value (*)(Interpreter&, const Value&, CallArgs&);

[[noreturn]] void filter_arg_error(const std::string& msg) { throw TemplateError("FilterArgumentError", msg); }

Value lowered(const Value& v) { return v.is_string() ? Value(unicode::lower(v.str())) : v; }

// jinja2's make_attrgetter: "a.b.0" walks getitem per dotted part (integer
// parts index), the `default` replaces an undefined result.
Value get_path(Interpreter& in, const Value& item, const Value& attribute, const Value& dflt = Value()) {
  Value v = item;
  if (attribute.is_int()) {
    v = in.getitem(v, attribute);
  } else {
    const std::string path = attribute.to_str();
    size_t pos = 0;
    for (;;) {
      const size_t dot = path.find('.', pos);
      const std::string part = path.substr(pos, dot == std::string::npos ? std::string::npos : dot - pos);
      if (!part.empty() && part.find_first_not_of("0123456789") == std::string::npos && part.size() < 18)
        v = in.getitem(v, Value(static_cast<int64_t>(std::stoll(part))));
      else
        v = in.getitem(v, Value(part));
      if (dot == std::string::npos) break;
      pos = dot + 1;
    }
  }
  if (!dflt.is_undefined() && !dflt.is_none() && v.is_undefined()) return dflt;
  return v;
}

std::vector<Value> items_of(Interpreter& in, const Value& v) {
  std::vector<Value> items = py::iterate(v);
  in.count(static_cast<int64_t>(items.size()));
  return items;
}

std::string html_escape(const std::string& s) {
  std::string out;
  out.reserve(s.size());
  for (char c : s) {
    switch (c) {
      case '&': out += "&amp;"; break;
      case '<': out += "&lt;"; break;
      case '>': out += "&gt;"; break;
      case '"': out += "&#34;"; break;
      case '\'': out += "&#39;"; break;
      default: out += c;
    }
  }
  return out;
}

// Python int(str, base) / float(str); nullopt where Python raises ValueError.
std::optional<int64_t> parse_int(std::string s, int base) {
  s = py_strip(s, std::nullopt, true, true);
  size_t i = 0;
  bool neg = false;
  if (i < s.size() && (s[i] == '+' || s[i] == '-')) neg = s[i++] == '-';
  if ((base == 16 || base == 8 || base == 2 || base == 0) && i + 1 < s.size() && s[i] == '0') {
    const char p = static_cast<char>(std::tolower(static_cast<unsigned char>(s[i + 1])));
    const int b = p == 'x' ? 16 : p == 'o' ? 8 : p == 'b' ? 2 : 0;
    if (b && (base == 0 || base == b)) base = b, i += 2;
  }
  if (base == 0) base = 10;
  if (i >= s.size()) return std::nullopt;
  int64_t v = 0;
  bool prev_digit = false;
  for (; i < s.size(); ++i) {
    const char c = static_cast<char>(std::tolower(static_cast<unsigned char>(s[i])));
    if (c == '_' && prev_digit && i + 1 < s.size()) {
      prev_digit = false;
      continue;
    }
    const int d = (c >= '0' && c <= '9') ? c - '0' : (c >= 'a' && c <= 'z') ? c - 'a' + 10 : 99;
    if (d >= base) return std::nullopt;
    if (__builtin_mul_overflow(v, base, &v) || __builtin_add_overflow(v, d, &v))
      throw TemplateError("OverflowError", "integer too large");
    prev_digit = true;
  }
  if (!prev_digit) return std::nullopt;
  return neg ? -v : v;
}

std::optional<double> parse_float(const std::string& raw) {
  std::string s = py_strip(raw, std::nullopt, true, true);
  std::string t;
  for (size_t i = 0; i < s.size(); ++i) {
    if (s[i] == '_' && i > 0 && i + 1 < s.size() && std::isdigit(static_cast<unsigned char>(s[i - 1])) &&
        std::isdigit(static_cast<unsigned char>(s[i + 1])))
      continue;
    t += s[i];
  }
  if (t.empty()) return std::nullopt;
  std::string low = unicode::lower(t);
  size_t k = (low[0] == '+' || low[0] == '-') ? 1 : 0;
  const std::string body = low.substr(k);
  const double sign = (k && low[0] == '-') ? -1.0 : 1.0;
  if (body == "inf" || body == "infinity") return sign * INFINITY;
  if (body == "nan") return NAN;
  for (char c : body)
    if (!std::isdigit(static_cast<unsigned char>(c)) && c != '.' && c != 'e' && c != '+' && c != '-') return std::nullopt;
  char* end = nullptr;
  const double d = std::strtod(t.c_str(), &end);
  if (end != t.c_str() + t.size()) return std::nullopt;
  return d;
}

Value f_int(Interpreter&, const Value& v, CallArgs& args) {
  BoundArgs a("int", args, {"default", "base"});
  const Value dflt = a.get_or(0, Value(0));
  const int base = static_cast<int>(a.get_or(1, Value(10)).int_value());
  if (v.is_undefined()) py::fail_undefined(v);
  if (v.is_int() || v.is_bool()) return Value(v.int_value());
  if (v.is_float()) {
    if (!std::isfinite(v.as_float())) throw TemplateError("OverflowError", "cannot convert float infinity to integer");
    return Value(static_cast<int64_t>(std::trunc(v.as_float())));
  }
  if (v.is_string()) {
    if (auto i = parse_int(v.str(), base)) return Value(*i);
    if (auto d = parse_float(v.str()); d && std::isfinite(*d)) return Value(static_cast<int64_t>(std::trunc(*d)));
  }
  return dflt;
}

Value f_float(Interpreter&, const Value& v, CallArgs& args) {
  BoundArgs a("float", args, {"default"});
  if (v.is_undefined()) py::fail_undefined(v);
  if (v.is_number()) return Value(v.number());
  if (v.is_string())
    if (auto d = parse_float(v.str())) return Value(*d);
  return a.get_or(0, Value(0.0));
}

Value f_abs(Interpreter&, const Value& v, CallArgs& args) {
  BoundArgs a("abs", args, {});
  if (v.is_float()) return Value(std::fabs(v.as_float()));
  if (v.is_int() || v.is_bool()) {
    if (v.int_value() == INT64_MIN) throw TemplateError("OverflowError", "integer result too large");
    return Value(v.int_value() < 0 ? -v.int_value() : v.int_value());
  }
  throw_type_error("bad operand type for abs(): '" + v.type_name() + "'");
}

Value f_round(Interpreter&, const Value& v, CallArgs& args) {
  BoundArgs a("round", args, {"precision", "method"});
  const int64_t prec = a.get_or(0, Value(0)).int_value();
  const std::string method = a.get_or(1, Value("common")).to_str();
  if (method != "common" && method != "ceil" && method != "floor")
    filter_arg_error("method must be common, ceil or floor");
  if (v.is_undefined()) py::fail_undefined(v);
  if (!v.is_number()) throw_type_error("type " + v.type_name() + " doesn't define __round__ method");
  if (method == "common") {
    if (v.is_int() || v.is_bool()) {
      if (prec >= 0) return Value(v.int_value());
      const double p = std::pow(10.0, static_cast<double>(-prec));
      return Value(static_cast<int64_t>(std::nearbyint(v.number() / p) * p));
    }
    const double d = v.as_float();
    if (!std::isfinite(d)) return Value(d);
    if (prec >= 0 && prec < 300) {
      // Correctly rounded decimal conversion (glibc printf is exact and rounds
      // half to even), the same result as Python's round(x, n).
      char buf[512];
      std::snprintf(buf, sizeof(buf), "%.*f", static_cast<int>(prec), d);
      return Value(std::strtod(buf, nullptr));
    }
    const double p = std::pow(10.0, static_cast<double>(-prec));
    return Value(std::nearbyint(d / p) * p);
  }
  const double p = std::pow(10.0, static_cast<double>(prec));
  return Value((method == "ceil" ? std::ceil(v.number() * p) : std::floor(v.number() * p)) / p);
}

Value f_default(Interpreter&, const Value& v, CallArgs& args) {
  BoundArgs a("default", args, {"default_value", "boolean"});
  const bool boolean = a.get_or(1, Value(false)).truthy();
  if (v.is_undefined() || (boolean && !v.truthy())) return a.get_or(0, Value(""));
  return v;
}

Value f_length(Interpreter&, const Value& v, CallArgs& args) {
  BoundArgs a("length", args, {});
  return Value(py::length(v));
}

Value f_string(Interpreter&, const Value& v, CallArgs& args) {
  BoundArgs a("string", args, {});
  return Value(v.to_str());
}

Value f_upper(Interpreter&, const Value& v, CallArgs&) { return Value(unicode::upper(v.to_str())); }
Value f_lower(Interpreter&, const Value& v, CallArgs&) { return Value(unicode::lower(v.to_str())); }

Value f_capitalize(Interpreter& in, const Value& v, CallArgs&) {
  CallArgs none;
  return method(Value(v.to_str()), "capitalize")->fn().fn(in, none);
}

Value f_title(Interpreter&, const Value& v, CallArgs&) {
  // jinja2's do_title: capitalize each chunk after -, whitespace or brackets.
  const std::string s = v.to_str();
  std::string out;
  bool word_start = true;
  char32_t c;
  for (size_t i = 0; i < s.size();) {
    const size_t n = unicode::decode(s, i, &c);
    const bool sep = c == '-' || unicode::is_space(c) || c == '(' || c == '{' || c == '[' || c == '<';
    if (sep) {
      out.append(s, i, n);
      word_start = true;
    } else {
      unicode::append(out, word_start ? unicode::to_upper(c) : unicode::to_lower(c));
      word_start = false;
    }
    i += n;
  }
  return Value(std::move(out));
}

Value f_trim(Interpreter&, const Value& v, CallArgs& args) {
  BoundArgs a("trim", args, {"chars"});
  std::optional<std::string> chars;
  if (a.has(0) && !a.get(0).is_none()) chars = a.get(0).to_str();
  return Value(py_strip(v.to_str(), chars, true, true));
}

Value f_replace(Interpreter& in, const Value& v, CallArgs& args) {
  BoundArgs a("replace", args, {"old", "new", "count"});
  CallArgs call;
  call.args = {Value(a.get(0).to_str()), Value(a.get(1).to_str())};
  if (a.has(2) && !a.get(2).is_none()) call.args.push_back(a.get(2));
  return method(Value(v.to_str()), "replace")->fn().fn(in, call);
}

Value f_center(Interpreter& in, const Value& v, CallArgs& args) {
  BoundArgs a("center", args, {"width"});
  CallArgs call;
  call.args = {a.get_or(0, Value(80))};
  return method(Value(v.to_str()), "center")->fn().fn(in, call);
}

Value f_escape(Interpreter&, const Value& v, CallArgs&) { return Value(html_escape(v.to_str())); }
Value f_safe(Interpreter&, const Value& v, CallArgs&) { return Value(v.to_str()); }

Value f_indent(Interpreter& in, const Value& v, CallArgs& args) {
  BoundArgs a("indent", args, {"width", "first", "blank"});
  const Value w = a.get_or(0, Value(4));
  std::string ind;
  if (w.is_string()) {
    ind = w.str();
  } else {
    in.check_size(static_cast<size_t>(std::max<int64_t>(0, w.int_value())));
    ind = std::string(static_cast<size_t>(std::max<int64_t>(0, w.int_value())), ' ');
  }
  const bool first = a.get_or(1, Value(false)).truthy();
  const bool blank = a.get_or(2, Value(false)).truthy();
  if (v.is_undefined()) py::fail_undefined(v);
  std::vector<std::string> lines = py_splitlines(v.to_str() + "\n");
  std::string rv;
  if (blank) {
    for (size_t i = 0; i < lines.size(); ++i) rv += (i ? "\n" + ind : "") + lines[i];
  } else if (!lines.empty()) {
    rv = lines[0];
    for (size_t i = 1; i < lines.size(); ++i) rv += "\n" + (lines[i].empty() ? "" : ind + lines[i]);
  }
  if (first) rv = ind + rv;
  in.check_size(rv.size());
  return Value(std::move(rv));
}

Value f_first(Interpreter&, const Value& v, CallArgs&) {
  std::vector<Value> items = py::iterate(v);
  if (items.empty()) return Value::undefined("No first item, sequence was empty.");
  return items.front();
}

Value f_last(Interpreter&, const Value& v, CallArgs&) {
  std::vector<Value> items = py::iterate(v);
  if (items.empty()) return Value::undefined("No last item, sequence was empty.");
  return items.back();
}

Value f_list(Interpreter& in, const Value& v, CallArgs&) { return Value::make_list(items_of(in, v)); }

Value f_reverse(Interpreter& in, const Value& v, CallArgs&) {
  if (v.is_string()) return py::slice(v, Value::none(), Value::none(), Value(-1));
  std::vector<Value> items = items_of(in, v);
  std::reverse(items.begin(), items.end());
  return Value::make_list(std::move(items));
}

Value f_join(Interpreter& in, const Value& v, CallArgs& args) {
  BoundArgs a("join", args, {"d", "attribute"});
  const std::string sep = a.get_or(0, Value("")).to_str();
  const Value attr = a.get_or(1, Value::none());
  std::string out;
  bool first = true;
  for (const Value& item : items_of(in, v)) {
    if (!first) out += sep;
    first = false;
    out += (attr.is_none() ? item : get_path(in, item, attr)).to_str();
    in.check_size(out.size());
  }
  return Value(std::move(out));
}

Value f_items(Interpreter& in, const Value& v, CallArgs&) {
  if (v.is_undefined()) return Value::make_list();
  if (!v.is_mapping()) throw_type_error("Can only get item pairs from a mapping.");
  in.count(static_cast<int64_t>(v.dict().size()));
  std::vector<Value> out;
  for (const auto& [k, x] : v.dict().entries) out.push_back(Value::make_list({k, x}, true));
  return Value::make_list(std::move(out));
}

Value f_dictsort(Interpreter& in, const Value& v, CallArgs& args) {
  BoundArgs a("dictsort", args, {"case_sensitive", "by", "reverse"});
  const bool cs = a.get_or(0, Value(false)).truthy();
  const std::string by = a.get_or(1, Value("key")).to_str();
  const bool rev = a.get_or(2, Value(false)).truthy();
  if (by != "key" && by != "value") filter_arg_error("You can only sort by either \"key\" or \"value\"");
  if (v.is_undefined()) py::fail_undefined(v);
  if (!v.is_mapping()) throw TemplateError("AttributeError", "'" + v.type_name() + "' object has no attribute 'items'");
  in.count(static_cast<int64_t>(v.dict().size()));
  std::vector<Value> pairs;
  for (const auto& [k, x] : v.dict().entries) pairs.push_back(Value::make_list({k, x}, true));
  const size_t pos = by == "key" ? 0 : 1;
  std::stable_sort(pairs.begin(), pairs.end(), [&](const Value& x, const Value& y) {
    Value kx = x.list().items[pos], ky = y.list().items[pos];
    if (!cs) kx = lowered(kx), ky = lowered(ky);
    return rev ? compare_values(ky, kx) < 0 : compare_values(kx, ky) < 0;
  });
  return Value::make_list(std::move(pairs));
}

// Keys for sort/unique/min/max: attribute path(s), lowercased unless case
// sensitive.
Value sort_key(Interpreter& in, const Value& item, const Value& attr, bool cs) {
  Value k = item;
  if (!attr.is_none() && !attr.is_undefined()) {
    if (attr.is_string() && attr.str().find(',') != std::string::npos) {
      std::vector<Value> parts;
      size_t pos = 0;
      const std::string& s = attr.str();
      for (;;) {
        const size_t c = s.find(',', pos);
        Value p = get_path(in, item, Value(s.substr(pos, c == std::string::npos ? std::string::npos : c - pos)));
        parts.push_back(cs ? p : lowered(p));
        if (c == std::string::npos) break;
        pos = c + 1;
      }
      return Value::make_list(std::move(parts));
    }
    k = get_path(in, item, attr);
  }
  return cs ? k : lowered(k);
}

Value f_sort(Interpreter& in, const Value& v, CallArgs& args) {
  BoundArgs a("sort", args, {"reverse", "case_sensitive", "attribute"});
  const bool rev = a.get_or(0, Value(false)).truthy();
  const bool cs = a.get_or(1, Value(false)).truthy();
  const Value attr = a.get_or(2, Value::none());
  std::vector<Value> items = items_of(in, v);
  std::vector<std::pair<Value, Value>> keyed;
  for (Value& i : items) keyed.emplace_back(sort_key(in, i, attr, cs), std::move(i));
  std::stable_sort(keyed.begin(), keyed.end(), [&](const auto& x, const auto& y) {
    return rev ? compare_values(y.first, x.first) < 0 : compare_values(x.first, y.first) < 0;
  });
  std::vector<Value> out;
  for (auto& kv : keyed) out.push_back(std::move(kv.second));
  return Value::make_list(std::move(out));
}

Value f_unique(Interpreter& in, const Value& v, CallArgs& args) {
  BoundArgs a("unique", args, {"case_sensitive", "attribute"});
  const bool cs = a.get_or(0, Value(false)).truthy();
  const Value attr = a.get_or(1, Value::none());
  std::unordered_set<std::string> seen;
  std::vector<Value> out;
  for (const Value& item : items_of(in, v))
    if (seen.insert(dict_key(sort_key(in, item, attr, cs))).second) out.push_back(item);
  return Value::make_list(std::move(out));
}

Value min_max(Interpreter& in, const Value& v, CallArgs& args, bool want_max) {
  BoundArgs a(want_max ? "max" : "min", args, {"case_sensitive", "attribute"});
  const bool cs = a.get_or(0, Value(false)).truthy();
  const Value attr = a.get_or(1, Value::none());
  std::vector<Value> items = items_of(in, v);
  if (items.empty()) return Value::undefined("No aggregated item, sequence was empty.");
  size_t best = 0;
  Value best_key = sort_key(in, items[0], attr, cs);
  for (size_t i = 1; i < items.size(); ++i) {
    Value k = sort_key(in, items[i], attr, cs);
    const int c = compare_values(k, best_key);
    if (want_max ? c > 0 : c < 0) best = i, best_key = k;
  }
  return items[best];
}
Value f_max(Interpreter& in, const Value& v, CallArgs& args) { return min_max(in, v, args, true); }
Value f_min(Interpreter& in, const Value& v, CallArgs& args) { return min_max(in, v, args, false); }

Value f_sum(Interpreter& in, const Value& v, CallArgs& args) {
  BoundArgs a("sum", args, {"attribute", "start"});
  const Value attr = a.get_or(0, Value::none());
  Value total = a.get_or(1, Value(0));
  for (const Value& item : items_of(in, v)) {
    const Value x = attr.is_none() ? item : get_path(in, item, attr);
    if (total.is_string() || x.is_string()) throw_type_error("sum() can't sum strings [use ''.join(seq) instead]");
    total = binary_op(in, "+", total, x);
  }
  return total;
}

Value f_map(Interpreter& in, const Value& v, CallArgs& args) {
  std::vector<Value> out;
  if (args.args.empty()) {
    Value attr, dflt = Value::none();
    for (auto& [k, x] : args.kwargs) {
      if (k == "attribute") attr = x;
      else if (k == "default") dflt = x;
      else filter_arg_error("Unexpected keyword argument '" + k + "'");
    }
    if (attr.is_undefined()) filter_arg_error("map requires a filter argument");
    for (const Value& item : items_of(in, v)) out.push_back(get_path(in, item, attr, dflt));
    return Value::make_list(std::move(out));
  }
  const std::string name = args.args[0].to_str();
  CallArgs rest;
  rest.args.assign(args.args.begin() + 1, args.args.end());
  rest.kwargs = args.kwargs;
  for (const Value& item : items_of(in, v)) {
    CallArgs copy = rest;
    out.push_back(in.apply_filter(name, item, copy));
  }
  return Value::make_list(std::move(out));
}

Value select_impl(Interpreter& in, const Value& v, CallArgs& args, bool want, bool by_attr) {
  size_t off = 0;
  Value attr;
  if (by_attr) {
    if (args.args.empty()) filter_arg_error("Missing parameter for attribute name");
    attr = args.args[0];
    off = 1;
  }
  std::optional<std::string> test;
  CallArgs rest;
  if (args.args.size() > off) {
    test = args.args[off].to_str();
    rest.args.assign(args.args.begin() + static_cast<long>(off) + 1, args.args.end());
    rest.kwargs = args.kwargs;
  }
  std::vector<Value> out;
  // As llama-server's engine: none selects nothing (Functionary v3.1 filters
  // `tools`, which it sets to none when a request has no tools).
  if (v.is_none()) return Value::make_list(std::move(out));
  for (const Value& item : items_of(in, v)) {
    const Value x = by_attr ? get_path(in, item, attr) : item;
    bool ok;
    if (test) {
      CallArgs copy = rest;
      ok = in.apply_test(*test, x, copy);
    } else {
      ok = x.truthy();
    }
    if (ok == want) out.push_back(item);
  }
  return Value::make_list(std::move(out));
}
Value f_select(Interpreter& in, const Value& v, CallArgs& a) { return select_impl(in, v, a, true, false); }
Value f_reject(Interpreter& in, const Value& v, CallArgs& a) { return select_impl(in, v, a, false, false); }
Value f_selectattr(Interpreter& in, const Value& v, CallArgs& a) { return select_impl(in, v, a, true, true); }
Value f_rejectattr(Interpreter& in, const Value& v, CallArgs& a) { return select_impl(in, v, a, false, true); }

Value f_attr(Interpreter& in, const Value& v, CallArgs& args) {
  BoundArgs a("attr", args, {"name"});
  const std::string name = a.get(0).to_str();
  if (v.is_mapping()) {
    // Plain getattr: dict keys are not attributes.
    if (auto m = method(v, name); m && name[0] != '_') return *m;
    return Value::undefined("'dict object' has no attribute " + repr_string(name));
  }
  return in.getattr(v, name);
}

Value f_batch(Interpreter& in, const Value& v, CallArgs& args) {
  BoundArgs a("batch", args, {"linecount", "fill_with"});
  const int64_t n = a.get(0).int_value();
  if (n <= 0) filter_arg_error("linecount must be positive");
  const Value fill = a.get_or(1, Value::none());
  std::vector<Value> out, cur;
  for (const Value& item : items_of(in, v)) {
    if (static_cast<int64_t>(cur.size()) == n) out.push_back(Value::make_list(std::move(cur))), cur.clear();
    cur.push_back(item);
  }
  if (!cur.empty()) {
    if (!fill.is_none()) {
      in.check_size(static_cast<size_t>(n));
      while (static_cast<int64_t>(cur.size()) < n) cur.push_back(fill);
    }
    out.push_back(Value::make_list(std::move(cur)));
  }
  return Value::make_list(std::move(out));
}

Value f_slice(Interpreter& in, const Value& v, CallArgs& args) {
  BoundArgs a("slice", args, {"slices", "fill_with"});
  const int64_t slices = a.get(0).int_value();
  if (slices <= 0) filter_arg_error("slices must be positive");
  in.count(slices);
  const Value fill = a.get_or(1, Value::none());
  std::vector<Value> seq = items_of(in, v);
  const int64_t len = static_cast<int64_t>(seq.size());
  const int64_t per = len / slices, extra = len % slices;
  int64_t offset = 0;
  std::vector<Value> out;
  for (int64_t k = 0; k < slices; ++k) {
    const int64_t start = offset + k * per;
    if (k < extra) ++offset;
    const int64_t end = offset + (k + 1) * per;
    std::vector<Value> tmp(seq.begin() + start, seq.begin() + end);
    if (!fill.is_none() && k >= extra) tmp.push_back(fill);
    out.push_back(Value::make_list(std::move(tmp)));
  }
  return Value::make_list(std::move(out));
}

Value f_format(Interpreter& in, const Value& v, CallArgs& args) {
  if (!args.args.empty() && !args.kwargs.empty())
    filter_arg_error("can't handle positional and keyword arguments at the same time");
  if (!args.kwargs.empty()) {
    Value d = Value::make_dict();
    for (auto& [k, x] : args.kwargs) d.dict().set(Value(k), x);
    return Value(percent_format(in, v.to_str(), d));
  }
  return Value(percent_format(in, v.to_str(), Value::make_list(args.args, true)));
}

Value f_truncate(Interpreter&, const Value& v, CallArgs& args) {
  BoundArgs a("truncate", args, {"length", "killwords", "end", "leeway"});
  const int64_t length = a.get_or(0, Value(255)).int_value();
  const bool killwords = a.get_or(1, Value(false)).truthy();
  const std::string end = a.get_or(2, Value("...")).to_str();
  const int64_t leeway = a.get_or(3, Value(5)).int_value();
  const int64_t end_len = static_cast<int64_t>(unicode::length(end));
  if (length < end_len) throw TemplateError("AssertionError", "expected length >= " + std::to_string(end_len) + ", got " + std::to_string(length));
  const std::string s = v.to_str();
  const auto off = unicode::offsets(s);
  const int64_t n = static_cast<int64_t>(off.size()) - 1;
  if (n <= length + leeway) return Value(s);
  std::string head = s.substr(0, off[length - end_len]);
  if (!killwords) {
    const size_t sp = head.rfind(' ');
    if (sp != std::string::npos) head.resize(sp);
  }
  return Value(head + end);
}

Value f_wordcount(Interpreter&, const Value& v, CallArgs&) {
  const std::string s = v.to_str();
  int64_t n = 0;
  bool in_word = false;
  char32_t c;
  for (size_t i = 0; i < s.size(); i += unicode::decode(s, i, &c)) {
    unicode::decode(s, i, &c);
    const bool w = unicode::is_alpha(c) || unicode::is_digit(c) || c == '_';
    if (w && !in_word) ++n;
    in_word = w;
  }
  return Value(n);
}

// transformers' tojson: json.dumps(x, ensure_ascii=False, indent=None,
// separators=None, sort_keys=False).
Value f_tojson(Interpreter& in, const Value& v, CallArgs& args) {
  BoundArgs a("tojson", args, {"ensure_ascii", "indent", "separators", "sort_keys"});
  JsonDumpOptions opt;
  opt.ensure_ascii = a.get_or(0, Value(false)).truthy();
  const Value indent = a.get_or(1, Value::none());
  if (indent.is_string()) {
    opt.indent = indent.str();
  } else if (indent.is_int() || indent.is_bool()) {
    in.check_size(static_cast<size_t>(std::max<int64_t>(0, indent.int_value())));
    opt.indent = std::string(static_cast<size_t>(std::max<int64_t>(0, indent.int_value())), ' ');
  } else if (!indent.is_none()) {
    throw_type_error("indent must be an int or a str");
  }
  const Value seps = a.get_or(2, Value::none());
  if (!seps.is_none()) {
    if (!seps.is_list() || seps.list().items.size() != 2) throw_value_error("separators must be a (item, key) pair");
    opt.item_separator = seps.list().items[0].to_str();
    opt.key_separator = seps.list().items[1].to_str();
  }
  opt.sort_keys = a.get_or(3, Value(false)).truthy();
  std::string s = dump_json(v, opt);
  in.check_size(s.size());
  return Value(std::move(s));
}

const std::unordered_map<std::string, FilterFn>& table() {
  static const std::unordered_map<std::string, FilterFn> t = {
      {"abs", f_abs},         {"attr", f_attr},           {"batch", f_batch},
      {"capitalize", f_capitalize}, {"center", f_center}, {"count", f_length},
      {"d", f_default},       {"default", f_default},     {"dictsort", f_dictsort},
      {"e", f_escape},        {"escape", f_escape},       {"forceescape", f_escape},
      {"first", f_first},     {"float", f_float},         {"format", f_format},
      {"indent", f_indent},   {"int", f_int},             {"items", f_items},
      {"join", f_join},       {"last", f_last},           {"length", f_length},
      {"list", f_list},       {"lower", f_lower},         {"map", f_map},
      {"max", f_max},         {"min", f_min},             {"reject", f_reject},
      {"rejectattr", f_rejectattr}, {"replace", f_replace}, {"reverse", f_reverse},
      {"round", f_round},     {"safe", f_safe},           {"select", f_select},
      {"selectattr", f_selectattr}, {"slice", f_slice},   {"sort", f_sort},
      {"string", f_string},   {"sum", f_sum},             {"title", f_title},
      {"tojson", f_tojson},   {"trim", f_trim},           {"truncate", f_truncate},
      {"unique", f_unique},   {"upper", f_upper},         {"wordcount", f_wordcount},
  };
  return t;
}

}  // namespace

bool has_filter(const std::string& name) { return table().count(name) > 0; }

bool call_filter(Interpreter& in, const std::string& name, const Value& v, CallArgs& args, Value* out) {
  const auto& t = table();
  auto it = t.find(name);
  if (it == t.end()) return false;
  *out = it->second(in, v, args);
  return true;
}

}  // namespace oscar::chat::builtins
