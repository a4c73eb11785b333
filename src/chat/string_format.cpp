// Python's two string formatting mini-languages: `fmt % args` and
// str.format(), as far as templates use them (no nested replacement fields).
#include <cmath>
#include <cstdio>

#include "chat/builtins.h"
#include "chat/template_error.h"
#include "chat/unicode.h"

namespace oscar::chat::builtins {

namespace {

std::string printf_num(const std::string& spec, double d) {
  char buf[512];
  std::snprintf(buf, sizeof(buf), spec.c_str(), d);
  return buf;
}

std::string printf_int(const std::string& spec, long long v) {
  char buf[512];
  std::snprintf(buf, sizeof(buf), spec.c_str(), v);
  return buf;
}

void check_width(int64_t w) {
  if (w > 4096) throw_limit_error("format width too large");
}

int64_t to_int_for_format(const Value& v, char conv) {
  if (v.is_int() || v.is_bool()) return v.int_value();
  if (v.is_float()) {
    if (!std::isfinite(v.as_float())) throw TemplateError("OverflowError", "cannot convert float to integer");
    return static_cast<int64_t>(v.as_float());
  }
  throw_type_error(std::string("%") + conv + " format: a real number is required, not " + v.type_name());
}

// Pads s (already converted) to width with the given alignment.
std::string apply_width(std::string s, int64_t width, bool left_align) {
  const int64_t len = static_cast<int64_t>(unicode::length(s));
  if (width <= len) return s;
  const std::string padding(static_cast<size_t>(width - len), ' ');
  return left_align ? s + padding : padding + s;
}

// One conversion of `fmt % args`: arg converted by conv, with its flags
// ("-+ 0#"), width and precision (-1: none).
std::string percent_conversion(const Value& arg, char conv, const std::string& flags, int64_t width,
                               int64_t prec) {
  const bool left = flags.find('-') != std::string::npos;
  std::string spec = "%" + flags + (width >= 0 ? std::to_string(width) : "") + (prec >= 0 ? "." + std::to_string(prec) : "");
  switch (conv) {
    case 's':
    case 'r':
    case 'a': {
      std::string s = conv == 's' ? arg.to_str() : arg.repr();
      if (prec >= 0) {
        const auto off = unicode::offsets(s);
        if (static_cast<size_t>(prec) + 1 < off.size()) s.resize(off[prec]);
      }
      return apply_width(std::move(s), width, left);
    }
    case 'd':
    case 'i':
    case 'u':
      return printf_int(spec + "lld", to_int_for_format(arg, conv));
    case 'x':
    case 'X':
    case 'o':
      return printf_int(spec + "ll" + conv, to_int_for_format(arg, conv));
    case 'c': {
      if (arg.is_string()) return apply_width(arg.str(), width, left);
      std::string ch;
      unicode::append(ch, static_cast<char32_t>(to_int_for_format(arg, conv)));
      return apply_width(ch, width, left);
    }
    case 'f':
    case 'F':
    case 'e':
    case 'E':
    case 'g':
    case 'G': {
      if (!arg.is_number()) {
        if (arg.is_string() && conv != 'c')
          throw_type_error("must be real number, not str");
        throw_type_error("must be real number, not " + arg.type_name());
      }
      const double d = arg.number();
      if (!std::isfinite(d)) {
        std::string s = std::isnan(d) ? "nan" : (d < 0 ? "-inf" : "inf");
        if (conv >= 'A' && conv <= 'Z') s = unicode::upper(s);
        return apply_width(s, width, left);
      }
      return printf_num(spec + conv, d);
    }
    default:
      throw_value_error(std::string("unsupported format character '") + conv + "'");
  }
}

}  // namespace

std::string percent_format(Interpreter& in, const std::string& fmt, const Value& args) {
  std::vector<Value> positional;
  const Value* mapping = nullptr;
  if (args.is_tuple())
    positional = args.list().items;
  else if (args.is_mapping())
    mapping = &args;
  else
    positional.push_back(args);
  size_t next = 0;
  std::string out;
  for (size_t i = 0; i < fmt.size(); ++i) {
    if (fmt[i] != '%') {
      out += fmt[i];
      continue;
    }
    if (++i >= fmt.size()) throw_value_error("incomplete format");
    Value arg;
    bool have_arg = false;
    if (fmt[i] == '(') {
      const size_t close = fmt.find(')', i);
      if (close == std::string::npos) throw_value_error("incomplete format key");
      if (!mapping) throw_type_error("format requires a mapping");
      const Value* v = mapping->dict().find_str(fmt.substr(i + 1, close - i - 1));
      if (!v) throw TemplateError("KeyError", repr_string(fmt.substr(i + 1, close - i - 1)));
      arg = *v;
      have_arg = true;
      i = close + 1;
    }
    std::string flags;
    while (i < fmt.size() && std::string("-+ 0#").find(fmt[i]) != std::string::npos) flags += fmt[i++];
    auto take = [&]() -> Value {
      if (next >= positional.size()) throw_type_error("not enough arguments for format string");
      return positional[next++];
    };
    int64_t width = -1, prec = -1;
    if (i < fmt.size() && fmt[i] == '*') {
      width = take().int_value();
      ++i;
    } else {
      while (i < fmt.size() && fmt[i] >= '0' && fmt[i] <= '9') width = std::max<int64_t>(width, 0) * 10 + (fmt[i++] - '0');
    }
    if (i < fmt.size() && fmt[i] == '.') {
      ++i;
      prec = 0;
      if (i < fmt.size() && fmt[i] == '*') {
        prec = take().int_value();
        ++i;
      } else {
        while (i < fmt.size() && fmt[i] >= '0' && fmt[i] <= '9') prec = prec * 10 + (fmt[i++] - '0');
      }
    }
    while (i < fmt.size() && (fmt[i] == 'l' || fmt[i] == 'h' || fmt[i] == 'L')) ++i;
    if (i >= fmt.size()) throw_value_error("incomplete format");
    check_width(width);
    check_width(prec);
    const char conv = fmt[i];
    if (conv == '%') {
      out += '%';
      continue;
    }
    if (!have_arg) arg = mapping ? *mapping : take();
    out += percent_conversion(arg, conv, flags, width, prec);
    in.check_size(out.size());
  }
  if (!mapping && next < positional.size()) throw_type_error("not all arguments converted during string formatting");
  return out;
}

namespace {

// A parsed str.format() spec: [[fill]align][sign][#][0][width][,|_][.prec][type].
struct FormatSpec {
  std::string fill = " ";
  char align = 0;  // one of "<>^=", 0: by the value's kind
  char sign = 0;   // '+', '-', ' ' or 0
  bool alt = false;
  int64_t width = 0, prec = -1;
  char type = 0;
};

FormatSpec parse_format_spec(const std::string& spec) {
  FormatSpec fs;
  size_t i = 0;
  {
    char32_t c;
    const size_t n = unicode::decode(spec, 0, &c);
    if (n < spec.size() && std::string("<>^=").find(spec[n]) != std::string::npos) {
      fs.fill = spec.substr(0, n);
      fs.align = spec[n];
      i = n + 1;
    } else if (std::string("<>^=").find(spec[0]) != std::string::npos) {
      fs.align = spec[0];
      i = 1;
    }
  }
  if (i < spec.size() && (spec[i] == '+' || spec[i] == '-' || spec[i] == ' ')) fs.sign = spec[i++];
  if (i < spec.size() && spec[i] == '#') fs.alt = true, ++i;
  if (i < spec.size() && spec[i] == '0') {
    if (!fs.align) fs.fill = "0", fs.align = '=';
    ++i;
  }
  while (i < spec.size() && spec[i] >= '0' && spec[i] <= '9') fs.width = fs.width * 10 + (spec[i++] - '0');
  bool comma = false;
  if (i < spec.size() && (spec[i] == ',' || spec[i] == '_')) comma = true, ++i;
  if (i < spec.size() && spec[i] == '.') {
    ++i;
    fs.prec = 0;
    while (i < spec.size() && spec[i] >= '0' && spec[i] <= '9') fs.prec = fs.prec * 10 + (spec[i++] - '0');
  }
  if (i < spec.size()) fs.type = spec[i++];
  if (i != spec.size()) throw_value_error("Invalid format specifier");
  check_width(fs.width);
  check_width(fs.prec);
  if (comma) throw_value_error("thousands separators are not supported in templates");
  return fs;
}

// A number formatted by the spec, before padding; numeric is cleared for
// the 'c' type (a character pads like a string).
std::string format_number(const Value& v, const FormatSpec& fs, bool& numeric) {
  const char type = fs.type, sign = fs.sign;
  const int64_t prec = fs.prec;
  const bool as_int = (v.is_int() || v.is_bool()) && (!type || std::string("dxXobcn").find(type) != std::string::npos);
  std::string flags = std::string(sign == '+' ? "+" : sign == ' ' ? " " : "") + (fs.alt ? "#" : "");
  if (as_int) {
    const long long x = v.int_value();
    if (type == 'b') {
      unsigned long long u = x < 0 ? -static_cast<unsigned long long>(x) : x;
      std::string bits;
      do bits.insert(bits.begin(), static_cast<char>('0' + (u & 1))); while (u >>= 1);
      return (x < 0 ? "-" : (sign == '+' ? "+" : sign == ' ' ? " " : "")) + std::string(fs.alt ? "0b" : "") + bits;
    }
    if (type == 'c') {
      std::string body;
      unicode::append(body, static_cast<char32_t>(x));
      numeric = false;
      return body;
    }
    const char t = (!type || type == 'n') ? 'd' : type;
    return printf_int("%" + flags + "ll" + t, x);
  }
  const double d = v.number();
  char t = type ? type : 'g';
  if (!type && prec < 0) return (sign == '+' && d >= 0 ? "+" : sign == ' ' && d >= 0 ? " " : "") + v.to_str();
  if (t == '%') return printf_num("%" + flags + "." + std::to_string(prec < 0 ? 6 : prec) + "f", d * 100) + "%";
  if (std::string("eEfFgG").find(t) != std::string::npos)
    return printf_num("%" + flags + "." + std::to_string(prec < 0 ? 6 : prec) + t, d);
  throw_value_error(std::string("Unknown format code '") + t + "' for object of type 'float'");
}

// body padded with the spec's fill to its width; numbers align right by
// default, other values left.
std::string pad_formatted(const std::string& body, const FormatSpec& fs, bool numeric) {
  const int64_t len = static_cast<int64_t>(unicode::length(body));
  if (fs.width <= len) return body;
  const int64_t total = fs.width - len;
  const char align = fs.align ? fs.align : numeric ? '>' : '<';
  std::string out;
  auto fills = [&](int64_t n) {
    for (int64_t k = 0; k < n; ++k) out += fs.fill;
  };
  if (align == '<') {
    out = body;
    fills(total);
  } else if (align == '>') {
    fills(total);
    out += body;
  } else if (align == '^') {
    fills(total / 2);
    out += body;
    fills(total - total / 2);
  } else {  // '=': padding after the sign
    size_t signlen = (!body.empty() && (body[0] == '-' || body[0] == '+' || body[0] == ' ')) ? 1 : 0;
    out = body.substr(0, signlen);
    fills(total);
    out += body.substr(signlen);
  }
  return out;
}

}  // namespace

std::string format_spec(const Value& v, const std::string& spec) {
  if (spec.empty()) return v.to_str();
  const FormatSpec fs = parse_format_spec(spec);
  std::string body;
  bool numeric = false;
  if (v.is_string() || (!v.is_number() && !fs.type)) {
    if (fs.type && fs.type != 's')
      throw_value_error(std::string("Unknown format code '") + fs.type + "' for object of type 'str'");
    body = v.to_str();
    if (fs.prec >= 0) {
      const auto off = unicode::offsets(body);
      if (static_cast<size_t>(fs.prec) + 1 < off.size()) body.resize(off[fs.prec]);
    }
  } else if (v.is_number()) {
    numeric = true;
    body = format_number(v, fs, numeric);
  } else {
    body = v.to_str();
  }
  return pad_formatted(body, fs, numeric);
}

std::string str_format(Interpreter& in, const std::string& fmt, CallArgs& args) {
  std::string out;
  size_t auto_index = 0;
  for (size_t i = 0; i < fmt.size(); ++i) {
    const char c = fmt[i];
    if (c == '}') {
      if (i + 1 < fmt.size() && fmt[i + 1] == '}') {
        out += '}';
        ++i;
        continue;
      }
      throw_value_error("Single '}' encountered in format string");
    }
    if (c != '{') {
      out += c;
      continue;
    }
    if (i + 1 < fmt.size() && fmt[i + 1] == '{') {
      out += '{';
      ++i;
      continue;
    }
    const size_t close = fmt.find('}', i);
    if (close == std::string::npos) throw_value_error("Single '{' encountered in format string");
    std::string field = fmt.substr(i + 1, close - i - 1);
    i = close;
    std::string spec, conversion;
    if (auto colon = field.find(':'); colon != std::string::npos) {
      spec = field.substr(colon + 1);
      field.resize(colon);
    }
    if (auto bang = field.find('!'); bang != std::string::npos) {
      conversion = field.substr(bang + 1);
      field.resize(bang);
    }
    // field: "" | index | name, optionally followed by .attr / [key]
    size_t end = field.find_first_of(".[");
    std::string head = field.substr(0, end);
    Value v;
    if (head.empty()) {
      if (auto_index >= args.args.size()) throw TemplateError("IndexError", "Replacement index " + std::to_string(auto_index) + " out of range for positional args tuple");
      v = args.args[auto_index++];
    } else if (head.find_first_not_of("0123456789") == std::string::npos) {
      const size_t idx = std::stoul(head.substr(0, 9));
      if (idx >= args.args.size()) throw TemplateError("IndexError", "Replacement index " + head + " out of range for positional args tuple");
      v = args.args[idx];
    } else {
      bool found = false;
      for (auto& [k, val] : args.kwargs)
        if (k == head) v = val, found = true;
      if (!found) throw TemplateError("KeyError", repr_string(head));
    }
    while (end != std::string::npos && end < field.size()) {
      if (field[end] == '.') {
        size_t e2 = field.find_first_of(".[", end + 1);
        const std::string attr = field.substr(end + 1, e2 == std::string::npos ? std::string::npos : e2 - end - 1);
        v = in.getattr(v, attr);
        end = e2;
      } else {
        const size_t rb = field.find(']', end);
        if (rb == std::string::npos) throw_value_error("Missing ']' in format string");
        const std::string key = field.substr(end + 1, rb - end - 1);
        Value k = key.find_first_not_of("0123456789") == std::string::npos && !key.empty()
                      ? Value(static_cast<int64_t>(std::stoll(key.substr(0, 18))))
                      : Value(key);
        v = in.getitem(v, k);
        end = rb + 1;
      }
      if (v.is_undefined()) py::fail_undefined(v);
    }
    if (conversion == "r" || conversion == "a")
      v = Value(v.repr());
    else if (conversion == "s")
      v = Value(v.to_str());
    else if (!conversion.empty())
      throw_value_error("Unknown conversion specifier " + conversion);
    out += format_spec(v, spec);
    in.check_size(out.size());
  }
  return out;
}

}  // namespace oscar::chat::builtins
