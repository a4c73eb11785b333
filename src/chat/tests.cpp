// jinja2's built-in tests (`x is defined`, `x is mapping`, ...), with the
// Python type checks they make (e.g. `true is number` holds, `true is
// integer` does not).
#include <cmath>
#include <unordered_map>

#include "chat/builtins.h"
#include "chat/template_error.h"
#include "chat/unicode.h"

namespace oscar::chat::builtins {

namespace {

using TestFn = bool (*)(Interpreter&, const Value&, CallArgs&);

const Value& arg0(CallArgs& a, const char* name) {
  if (a.args.empty()) throw_type_error(std::string(name) + "() missing required argument");
  return a.args[0];
}

bool t_defined(Interpreter&, const Value& v, CallArgs&) { return !v.is_undefined(); }
bool t_undefined(Interpreter&, const Value& v, CallArgs&) { return v.is_undefined(); }
bool t_none(Interpreter&, const Value& v, CallArgs&) { return v.is_none(); }
bool t_boolean(Interpreter&, const Value& v, CallArgs&) { return v.is_bool(); }
bool t_true(Interpreter&, const Value& v, CallArgs&) { return v.is_bool() && v.as_bool(); }
bool t_false(Interpreter&, const Value& v, CallArgs&) { return v.is_bool() && !v.as_bool(); }
bool t_integer(Interpreter&, const Value& v, CallArgs&) { return v.is_int(); }
bool t_float(Interpreter&, const Value& v, CallArgs&) { return v.is_float(); }
bool t_number(Interpreter&, const Value& v, CallArgs&) { return v.is_number(); }
bool t_string(Interpreter&, const Value& v, CallArgs&) { return v.is_string(); }
bool t_mapping(Interpreter&, const Value& v, CallArgs&) { return v.is_mapping(); }
bool t_callable(Interpreter&, const Value& v, CallArgs&) {
  return v.is_callable() || (v.is_dict() && v.dict().type == DictData::Type::Loop && v.dict().find_str("__call__"));
}
bool t_escaped(Interpreter&, const Value&, CallArgs&) { return false; }
// Python: iter(x) succeeds (Undefined iterates as empty).
bool t_iterable(Interpreter&, const Value& v, CallArgs&) {
  return v.is_undefined() || v.is_string() || v.is_list() || v.is_mapping();
}
// Python: len(x) and x[...] both exist; true for str, list, tuple, dict and
// jinja2's Undefined.
bool t_sequence(Interpreter&, const Value& v, CallArgs&) {
  return v.is_undefined() || v.is_string() || v.is_list() || v.is_mapping();
}
bool t_lower(Interpreter& in, const Value& v, CallArgs&) {
  CallArgs none;
  return method(Value(v.to_str()), "islower")->fn().fn(in, none).truthy();
}
bool t_upper(Interpreter& in, const Value& v, CallArgs&) {
  CallArgs none;
  return method(Value(v.to_str()), "isupper")->fn().fn(in, none).truthy();
}

int64_t int_operand(const Value& v) {
  if (v.is_undefined()) py::fail_undefined(v);
  if (v.is_int() || v.is_bool()) return v.int_value();
  if (v.is_float()) return static_cast<int64_t>(v.as_float());
  throw_type_error("unsupported operand type(s) for %: '" + v.type_name() + "' and 'int'");
}

bool t_odd(Interpreter&, const Value& v, CallArgs&) {
  if (v.is_float()) return std::fmod(std::fabs(v.as_float()), 2.0) == 1.0;
  return int_operand(v) % 2 != 0;
}
bool t_even(Interpreter&, const Value& v, CallArgs&) {
  if (v.is_float()) return std::fmod(std::fabs(v.as_float()), 2.0) == 0.0;
  return int_operand(v) % 2 == 0;
}
bool t_divisibleby(Interpreter&, const Value& v, CallArgs& a) {
  const Value& n = arg0(a, "divisibleby");
  if (v.is_float() || n.is_float()) {
    if (n.number() == 0) throw TemplateError("ZeroDivisionError", "float modulo");
    return std::fmod(v.number(), n.number()) == 0.0;
  }
  const int64_t d = int_operand(n);
  if (d == 0) throw TemplateError("ZeroDivisionError", "integer division or modulo by zero");
  if (d == -1) return true;
  return int_operand(v) % d == 0;
}

bool t_eq(Interpreter&, const Value& v, CallArgs& a) { return values_equal(v, arg0(a, "eq")); }
bool t_ne(Interpreter&, const Value& v, CallArgs& a) { return !values_equal(v, arg0(a, "ne")); }
int ordered(const Value& v, const Value& o) {
  if (v.is_undefined()) py::fail_undefined(v);
  if (o.is_undefined()) py::fail_undefined(o);
  return compare_values(v, o);
}
bool t_lt(Interpreter&, const Value& v, CallArgs& a) { return ordered(v, arg0(a, "lt")) < 0; }
bool t_le(Interpreter&, const Value& v, CallArgs& a) { return ordered(v, arg0(a, "le")) <= 0; }
bool t_gt(Interpreter&, const Value& v, CallArgs& a) { return ordered(v, arg0(a, "gt")) > 0; }
bool t_ge(Interpreter&, const Value& v, CallArgs& a) { return ordered(v, arg0(a, "ge")) >= 0; }
bool t_in(Interpreter&, const Value& v, CallArgs& a) { return py::contains(arg0(a, "in"), v); }

// Python `is`: identity for containers; for scalars, the cases where CPython
// shares objects (None, booleans, small ints, equal strings).
bool t_sameas(Interpreter&, const Value& v, CallArgs& a) {
  const Value& o = arg0(a, "sameas");
  if (v.kind() != o.kind()) return false;
  switch (v.kind()) {
    case Value::Kind::List:
    case Value::Kind::Dict:
    case Value::Kind::Callable:
      return v.identity() == o.identity();
    case Value::Kind::Int:
      return v.as_int() == o.as_int() && v.as_int() >= -5 && v.as_int() <= 256;
    case Value::Kind::Float:
      return false;
    default:
      return values_equal(v, o);
  }
}

bool t_filter(Interpreter&, const Value& v, CallArgs&) { return v.is_string() && has_filter(v.str()); }
bool t_test(Interpreter&, const Value& v, CallArgs&) { return v.is_string() && has_test(v.str()); }

const std::unordered_map<std::string, TestFn>& table() {
  static const std::unordered_map<std::string, TestFn> t = {
      {"defined", t_defined},   {"undefined", t_undefined}, {"none", t_none},
      {"boolean", t_boolean},   {"true", t_true},           {"false", t_false},
      {"integer", t_integer},   {"float", t_float},         {"number", t_number},
      {"string", t_string},     {"mapping", t_mapping},     {"callable", t_callable},
      {"escaped", t_escaped},   {"iterable", t_iterable},   {"sequence", t_sequence},
      {"lower", t_lower},       {"upper", t_upper},         {"odd", t_odd},
      {"even", t_even},         {"divisibleby", t_divisibleby},
      {"eq", t_eq},             {"equalto", t_eq},          {"==", t_eq},
      {"ne", t_ne},             {"!=", t_ne},               {"lt", t_lt},
      {"lessthan", t_lt},       {"<", t_lt},                {"le", t_le},
      {"<=", t_le},             {"gt", t_gt},               {"greaterthan", t_gt},
      {">", t_gt},              {"ge", t_ge},               {">=", t_ge},
      {"in", t_in},             {"sameas", t_sameas},       {"filter", t_filter},
      {"test", t_test},
  };
  return t;
}

}  // namespace

bool has_test(const std::string& name) { return table().count(name) > 0; }

bool call_test(Interpreter& in, const std::string& name, const Value& v, CallArgs& args, bool* out) {
  const auto& t = table();
  auto it = t.find(name);
  if (it == t.end()) return false;
  *out = it->second(in, v, args);
  return true;
}

}  // namespace oscar::chat::builtins
