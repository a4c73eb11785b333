// The value type of the template interpreter, with Python's semantics as
// jinja2 sees them: none, bool, int, float, str, list/tuple, dict (insertion
// ordered), callables and jinja2's Undefined. Lists and dicts are shared by
// reference like Python objects (a namespace() mutated inside a loop must be
// seen outside it); strings are UTF-8 and indexed by code point.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <unordered_map>
#include <utility>
#include <variant>
#include <vector>

namespace oscar::chat {

class Value;
class Interpreter;

// Kinds of dict-like objects. Dict: a Python dict. Namespace: jinja2's
// namespace() object (attribute access only, assignable via `set ns.x`).
// Loop: the `loop` variable.
enum class DictType { Dict, Namespace, Loop };

struct ListData;
struct DictData;
struct CallableData;
struct CallArgs;

using NativeFn = std::function<Value(Interpreter&, CallArgs&)>;

class Value {
 public:
  enum class Kind : uint8_t { Undefined, None, Bool, Int, Float, String, List, Dict, Callable };

  Value() : v_(Undef{}) {}
  Value(bool b) : v_(b) {}
  Value(int i) : v_(static_cast<int64_t>(i)) {}
  Value(int64_t i) : v_(i) {}
  Value(double d) : v_(d) {}
  Value(std::string s) : v_(std::move(s)) {}
  Value(std::string_view s) : v_(std::string(s)) {}
  Value(const char* s) : v_(std::string(s)) {}

  // An undefined value; `hint` is the UndefinedError message raised when the
  // value is used in a way jinja2's default Undefined refuses.
  static Value undefined(std::string hint = "value is undefined") {
    Value v;
    v.v_ = Undef{std::move(hint)};
    return v;
  }
  static Value none() {
    Value v;
    v.v_ = std::monostate{};
    return v;
  }
  static Value make_list(std::vector<Value> items = {}, bool tuple = false);
  static Value make_dict(DictType type = DictType::Dict);
  static Value make_callable(std::string name, NativeFn fn, bool is_macro = false);

  Kind kind() const { return static_cast<Kind>(v_.index()); }
  bool is_undefined() const { return kind() == Kind::Undefined; }
  bool is_none() const { return kind() == Kind::None; }
  bool is_bool() const { return kind() == Kind::Bool; }
  bool is_int() const { return kind() == Kind::Int; }
  bool is_float() const { return kind() == Kind::Float; }
  // Python's numbers include bool (bool is a subclass of int).
  bool is_number() const { return is_int() || is_float() || is_bool(); }
  bool is_string() const { return kind() == Kind::String; }
  bool is_list() const { return kind() == Kind::List; }
  bool is_tuple() const;
  bool is_dict() const { return kind() == Kind::Dict; }
  // A real Python dict (not a namespace or loop object).
  bool is_mapping() const;
  bool is_callable() const { return kind() == Kind::Callable; }

  bool as_bool() const { return std::get<bool>(v_); }
  int64_t as_int() const { return std::get<int64_t>(v_); }
  double as_float() const { return std::get<double>(v_); }
  // Int or bool as an integer (Python's int(True) == 1); TypeError for
  // anything else, as Python raises where an integer is required.
  int64_t int_value() const;
  // Any number as a double.
  double number() const;
  const std::string& str() const { return std::get<std::string>(v_); }
  ListData& list() const { return *std::get<std::shared_ptr<ListData>>(v_); }
  DictData& dict() const { return *std::get<std::shared_ptr<DictData>>(v_); }
  CallableData& fn() const { return *std::get<std::shared_ptr<CallableData>>(v_); }
  const std::string& undefined_hint() const { return std::get<Undef>(v_).hint; }
  // Identity of a shared object (list/dict/callable), for `is sameas`.
  const void* identity() const;

  // Python truthiness (Undefined is false).
  bool truthy() const;
  // Python str() (Undefined renders as the empty string).
  std::string to_str() const;
  // Python repr().
  std::string repr() const;
  // Python type name as used in error messages: 'str', 'list', 'NoneType', ...
  std::string type_name() const;

 private:
  struct Undef {
    std::string hint = "value is undefined";
  };
  std::variant<Undef, std::monostate, bool, int64_t, double, std::string, std::shared_ptr<ListData>,
               std::shared_ptr<DictData>, std::shared_ptr<CallableData>>
      v_;
};

// Arguments of a call: positional, then keyword in call order.
struct CallArgs {
  std::vector<Value> args;
  std::vector<std::pair<std::string, Value>> kwargs;
};

struct ListData {
  std::vector<Value> items;
  bool is_tuple = false;
};

// An insertion-ordered dict. Keys are hashable scalars; `index` maps a
// canonical form of the key (see dict_key) to its entry, so 1, 1.0 and True
// are the same key as in Python.
struct DictData {
  using Type = DictType;
  Type type = Type::Dict;
  std::vector<std::pair<Value, Value>> entries;
  std::unordered_map<std::string, size_t> index;

  const Value* find(const Value& key) const;
  const Value* find_str(std::string_view key) const;
  void set(const Value& key, Value v);
  size_t size() const { return entries.size(); }
};

struct CallableData {
  std::string name;
  NativeFn fn;
  bool is_macro = false;
};

inline bool Value::is_tuple() const { return is_list() && list().is_tuple; }
inline bool Value::is_mapping() const { return is_dict() && dict().type == DictData::Type::Dict; }

// Python float repr: shortest round-trip digits, exponent form when the
// decimal exponent is < -4 or >= 16 ("1e+16", "1.5e-05", "3.0").
std::string format_float(double d);
// Python repr of a str: picks ' or " like Python and escapes what is not
// printable.
std::string repr_string(std::string_view s);
// Canonical hash key of a dict key; throws TypeError for unhashable values.
std::string dict_key(const Value& key);

// Python ==, with 1 == 1.0 == True and element-wise list/dict comparison.
bool values_equal(const Value& a, const Value& b);
// Python ordering (<0, 0, >0); throws TypeError for unorderable types.
int compare_values(const Value& a, const Value& b);

}  // namespace oscar::chat
