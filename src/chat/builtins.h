// Built-in filters, tests, methods of str/list/dict and global functions,
// each with jinja2 3.1 / Python semantics. Implemented in filters.cpp,
// tests.cpp, methods.cpp, string_format.cpp and globals.cpp.
#pragma once

#include <ctime>
#include <functional>
#include <initializer_list>
#include <optional>
#include <string>
#include <vector>

#include "chat/interpreter.h"
#include "chat/value.h"

namespace oscar::chat::builtins {

// Binds call arguments to parameter names like a Python signature without
// *args/**kwargs: positionals first, then keywords; unknown or duplicate
// arguments raise TypeError naming `fn`.
class BoundArgs {
 public:
  BoundArgs(const std::string& fn, CallArgs& args, std::initializer_list<const char*> names);
  bool has(size_t i) const { return vals_[i].has_value(); }
  const Value& get(size_t i) const;  // TypeError if missing
  Value get_or(size_t i, Value def) const { return has(i) ? *vals_[i] : std::move(def); }

 private:
  std::string fn_;
  std::vector<std::string> names_;
  std::vector<std::optional<Value>> vals_;
};

// Filters: false when no filter has that name.
bool has_filter(const std::string& name);
bool call_filter(Interpreter& in, const std::string& name, const Value& v, CallArgs& args, Value* out);

// Tests (`is name`): false when no test has that name.
bool has_test(const std::string& name);
bool call_test(Interpreter& in, const std::string& name, const Value& v, CallArgs& args, bool* out);

// The bound method `obj.name` of a str, list/tuple or dict, if it exists.
// Mutating methods exist but raise SecurityError when called, like
// jinja2's ImmutableSandboxedEnvironment.
std::optional<Value> method(const Value& obj, const std::string& name);

// Python `fmt % args` (args: a tuple, a dict, or a single value).
std::string percent_format(Interpreter& in, const std::string& fmt, const Value& args);
// Python fmt.format(*args, **kwargs).
std::string str_format(Interpreter& in, const std::string& fmt, CallArgs& args);
// Python format(value, spec) for the common specs (fill/align/sign/width/.prec/type).
std::string format_spec(const Value& v, const std::string& spec);

// Python str methods used by filters too.
std::string py_strip(const std::string& s, const std::optional<std::string>& chars, bool left, bool right);
std::vector<std::string> py_splitlines(const std::string& s);

struct GlobalsConfig {
  // Clock for strftime_now as local broken-down time (transformers formats
  // datetime.now()); empty means the system clock.
  std::function<std::tm()> now;
};
// namespace, range, dict, joiner, raise_exception, strftime_now.
void install_globals(Scope& scope, const GlobalsConfig& cfg);

}  // namespace oscar::chat::builtins
