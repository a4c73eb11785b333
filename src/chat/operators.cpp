#include "chat/operators.h"

#include <cmath>
#include <limits>

#include "chat/builtins.h"
#include "chat/template_error.h"

namespace oscar::chat {

namespace {

bool is_intlike(const Value& v) { return v.is_int() || v.is_bool(); }

[[noreturn]] void unsupported(const std::string& op, const Value& a, const Value& b) {
  throw_type_error("unsupported operand type(s) for " + op + ": '" + a.type_name() + "' and '" + b.type_name() +
                   "'");
}

// Python ints are unbounded; ours are 64-bit, so overflow is an error rather
// than a silently wrong number.
[[noreturn]] void overflow() { throw TemplateError("OverflowError", "integer result too large"); }

Value repeat(Interpreter& in, const Value& seq, int64_t times) {
  if (times <= 0) return seq.is_string() ? Value(std::string()) : Value::make_list({}, seq.is_tuple());
  if (seq.is_string()) {
    const size_t total = seq.str().size() * static_cast<size_t>(times);
    if (!seq.str().empty() && total / seq.str().size() != static_cast<size_t>(times)) overflow();
    in.check_size(total);
    in.count(times);
    std::string out;
    out.reserve(total);
    for (int64_t i = 0; i < times; ++i) out += seq.str();
    return Value(std::move(out));
  }
  const auto& items = seq.list().items;
  const size_t total = items.size() * static_cast<size_t>(times);
  in.check_size(total);
  in.count(static_cast<int64_t>(total));
  std::vector<Value> out;
  out.reserve(total);
  for (int64_t i = 0; i < times; ++i) out.insert(out.end(), items.begin(), items.end());
  return Value::make_list(std::move(out), seq.is_tuple());
}

double float_mod(double a, double b) {
  double m = std::fmod(a, b);
  if (m != 0 && ((m < 0) != (b < 0))) m += b;
  return m;
}

Value int_pow(int64_t base, int64_t exp) {
  int64_t result = 1;
  int64_t b = base;
  while (exp > 0) {
    if (exp & 1) {
      if (__builtin_mul_overflow(result, b, &result)) overflow();
    }
    exp >>= 1;
    if (exp > 0 && __builtin_mul_overflow(b, b, &b)) overflow();
  }
  return Value(result);
}

}  // namespace

Value binary_op(Interpreter& in, const std::string& op, const Value& a, const Value& b) {
  if (op == "~") {
    std::string s = a.to_str();
    s += b.to_str();
    in.check_size(s.size());
    return Value(std::move(s));
  }
  // llama-server's template engine concatenates an undefined variable to a
  // string as "" (Firefunction v2 appends `functions`, which it never
  // defines): published templates render there, so they render here.
  if (op == "+" && a.is_undefined() && b.is_string()) return b;
  if (op == "+" && b.is_undefined() && a.is_string()) return a;
  // Otherwise jinja2's Undefined refuses arithmetic: raise its message.
  if (a.is_undefined()) py::fail_undefined(a);
  if (b.is_undefined()) py::fail_undefined(b);

  if (op == "%" && a.is_string()) return Value(builtins::percent_format(in, a.str(), b));

  if (a.is_number() && b.is_number()) {
    const bool ints = is_intlike(a) && is_intlike(b);
    if (op == "+" || op == "-" || op == "*") {
      if (ints) {
        int64_t r;
        const int64_t x = a.int_value(), y = b.int_value();
        const bool of = op == "+" ? __builtin_add_overflow(x, y, &r)
                        : op == "-" ? __builtin_sub_overflow(x, y, &r)
                                    : __builtin_mul_overflow(x, y, &r);
        if (of) overflow();
        return Value(r);
      }
      const double x = a.number(), y = b.number();
      return Value(op == "+" ? x + y : op == "-" ? x - y : x * y);
    }
    if (op == "/") {
      if (b.number() == 0) throw TemplateError("ZeroDivisionError", ints ? "division by zero" : "float division by zero");
      return Value(a.number() / b.number());
    }
    if (op == "//" || op == "%") {
      if (ints) {
        const int64_t x = a.int_value(), y = b.int_value();
        if (y == 0) throw TemplateError("ZeroDivisionError", "integer division or modulo by zero");
        if (x == std::numeric_limits<int64_t>::min() && y == -1) {
          if (op == "%") return Value(int64_t{0});
          overflow();
        }
        int64_t q = x / y, m = x % y;
        if (m != 0 && ((m < 0) != (y < 0))) {
          q -= 1;
          m += y;
        }
        return Value(op == "//" ? q : m);
      }
      const double x = a.number(), y = b.number();
      if (y == 0)
        throw TemplateError("ZeroDivisionError", op == "//" ? "float floor division by zero" : "float modulo");
      if (op == "%") return Value(float_mod(x, y));
      // CPython's float_divmod, so results match it bit for bit.
      double mod = std::fmod(x, y);
      double div = (x - mod) / y;
      if (mod != 0 && ((y < 0) != (mod < 0))) div -= 1.0;
      double floordiv = std::floor(div);
      if (div - floordiv > 0.5) floordiv += 1.0;
      return Value(div == 0 ? std::copysign(0.0, x / y) : floordiv);
    }
    if (op == "**") {
      if (ints && b.int_value() >= 0) return int_pow(a.int_value(), b.int_value());
      const double x = a.number(), y = b.number();
      if (x == 0 && y < 0) throw TemplateError("ZeroDivisionError", "0.0 cannot be raised to a negative power");
      return Value(std::pow(x, y));
    }
  }

  if (op == "+") {
    if (a.is_string() && b.is_string()) {
      in.check_size(a.str().size() + b.str().size());
      return Value(a.str() + b.str());
    }
    if (a.is_list() && b.is_list() && a.is_tuple() == b.is_tuple()) {
      std::vector<Value> items = a.list().items;
      in.check_size(items.size() + b.list().items.size());
      items.insert(items.end(), b.list().items.begin(), b.list().items.end());
      return Value::make_list(std::move(items), a.is_tuple());
    }
    if (a.is_string()) throw_type_error("can only concatenate str (not \"" + b.type_name() + "\") to str");
    if (a.is_list())
      throw_type_error("can only concatenate " + a.type_name() + " (not \"" + b.type_name() + "\") to " +
                       a.type_name());
    unsupported("+", a, b);
  }
  if (op == "*") {
    if ((a.is_string() || a.is_list()) && is_intlike(b)) return repeat(in, a, b.int_value());
    if ((b.is_string() || b.is_list()) && is_intlike(a)) return repeat(in, b, a.int_value());
    if (a.is_string() || b.is_string() || a.is_list() || b.is_list())
      throw_type_error("can't multiply sequence by non-int of type '" +
                       ((a.is_string() || a.is_list()) ? b : a).type_name() + "'");
  }
  unsupported(op == "**" ? "** or pow()" : op, a, b);
}

}  // namespace oscar::chat
