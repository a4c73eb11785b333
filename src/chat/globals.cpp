// Global functions available to chat templates: jinja2's defaults (range,
// dict, namespace, joiner) with the sandbox's range cap, plus
// transformers' raise_exception and strftime_now.
#include <memory>

#include "chat/builtins.h"
#include "chat/template_error.h"

namespace oscar::chat::builtins {

namespace {

// jinja2.sandbox.MAX_RANGE: the sandbox refuses larger ranges.
constexpr int64_t kMaxRange = 100000;

Value range_fn(Interpreter& in, CallArgs& a) {
  if (!a.kwargs.empty()) throw_type_error("range() takes no keyword arguments");
  if (a.args.empty() || a.args.size() > 3)
    throw_type_error("range expected at most 3 arguments, got " + std::to_string(a.args.size()));
  for (const Value& v : a.args) {
    if (v.is_undefined()) py::fail_undefined(v);
    if (!v.is_int() && !v.is_bool())
      throw_type_error("'" + v.type_name() + "' object cannot be interpreted as an integer");
  }
  int64_t start = 0, stop, step = 1;
  if (a.args.size() == 1) {
    stop = a.args[0].int_value();
  } else {
    start = a.args[0].int_value();
    stop = a.args[1].int_value();
    if (a.args.size() == 3) step = a.args[2].int_value();
  }
  if (step == 0) throw_value_error("range() arg 3 must not be zero");
  // Count with long double to avoid overflow on extreme bounds.
  const long double span = step > 0 ? static_cast<long double>(stop) - start : static_cast<long double>(start) - stop;
  const long double count = span <= 0 ? 0 : (span + (step > 0 ? step : -step) - 1) / (step > 0 ? step : -step);
  if (count > kMaxRange)
    throw TemplateError("OverflowError",
                        "Range too big. The sandbox blocks ranges larger than MAX_RANGE (100000).");
  const int64_t n = static_cast<int64_t>(count);
  in.count(n);
  std::vector<Value> items;
  items.reserve(static_cast<size_t>(n));
  for (int64_t i = 0, v = start; i < n; ++i, v += step) items.emplace_back(v);
  return Value::make_list(std::move(items));
}

// dict(mapping_or_pairs, **kwargs) into `d`.
void fill_dict(Value& d, CallArgs& a, const char* fn) {
  if (a.args.size() > 1) throw_type_error(std::string(fn) + " expected at most 1 argument, got " + std::to_string(a.args.size()));
  if (!a.args.empty()) {
    const Value& src = a.args[0];
    if (src.is_dict()) {
      for (const auto& [k, v] : src.dict().entries) d.dict().set(k, v);
    } else {
      for (const Value& pair : py::iterate(src)) {
        std::vector<Value> kv = py::iterate(pair);
        if (kv.size() != 2) throw_value_error("dictionary update sequence element has length " + std::to_string(kv.size()) + "; 2 is required");
        d.dict().set(kv[0], kv[1]);
      }
    }
  }
  for (auto& [k, v] : a.kwargs) d.dict().set(Value(k), v);
}

}  // namespace

void install_globals(Scope& scope, const GlobalsConfig& cfg) {
  scope.vars["range"] = Value::make_callable("range", range_fn);
  scope.vars["dict"] = Value::make_callable("dict", [](Interpreter&, CallArgs& a) {
    Value d = Value::make_dict();
    fill_dict(d, a, "dict");
    return d;
  });
  scope.vars["namespace"] = Value::make_callable("namespace", [](Interpreter& in, CallArgs& a) {
    Value d = Value::make_dict(DictData::Type::Namespace);
    in.adopt_namespace(d);
    fill_dict(d, a, "namespace");
    return d;
  });
  scope.vars["joiner"] = Value::make_callable("joiner", [](Interpreter&, CallArgs& args) {
    BoundArgs a("joiner", args, {"sep"});
    const std::string sep = a.get_or(0, Value(", ")).to_str();
    auto used = std::make_shared<bool>(false);
    return Value::make_callable("joiner", [sep, used](Interpreter&, CallArgs&) {
      if (!*used) {
        *used = true;
        return Value("");
      }
      return Value(sep);
    });
  });
  scope.vars["raise_exception"] = Value::make_callable("raise_exception", [](Interpreter&, CallArgs& a) -> Value {
    const std::string msg = a.args.empty() ? std::string() : a.args[0].to_str();
    throw TemplateError("TemplateError", msg);
  });
  auto now = cfg.now;
  scope.vars["strftime_now"] = Value::make_callable("strftime_now", [now](Interpreter& in, CallArgs& args) -> Value {
    BoundArgs a("strftime_now", args, {"format"});
    const std::string fmt = a.get(0).to_str();
    std::tm tm{};
    if (now) {
      tm = now();
    } else {
      const std::time_t t = std::time(nullptr);
      localtime_r(&t, &tm);
    }
    if (fmt.empty()) return Value("");
    // strftime reports 0 both for "too small" and for an empty result; grow
    // the buffer a few times, bounded by the output limit.
    for (size_t cap = 256; cap <= (1u << 20); cap *= 4) {
      in.check_size(cap);
      std::string buf(cap, '\0');
      const size_t n = std::strftime(buf.data(), buf.size(), fmt.c_str(), &tm);
      if (n > 0) return Value(buf.substr(0, n));
    }
    return Value("");
  });
}

}  // namespace oscar::chat::builtins
