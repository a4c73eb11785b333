#include "chat/interpreter.h"

#include <cmath>
#include <limits>

#include "chat/builtins.h"
#include "chat/operators.h"
#include "chat/template_error.h"
#include "chat/unicode.h"

namespace oscar::chat {

using namespace ast;

// ---------------------------------------------------------------------------
// Python helpers

namespace py {

[[noreturn]] void fail_undefined(const Value& v) { throw_undefined_error(v.undefined_hint()); }

std::vector<Value> iterate(const Value& v) {
  switch (v.kind()) {
    case Value::Kind::Undefined:
      return {};
    case Value::Kind::List:
      return v.list().items;
    case Value::Kind::Dict:
      if (v.dict().type == DictData::Type::Dict) {
        std::vector<Value> keys;
        keys.reserve(v.dict().size());
        for (const auto& e : v.dict().entries) keys.push_back(e.first);
        return keys;
      }
      break;
    case Value::Kind::String: {
      std::vector<Value> chars;
      const auto off = unicode::offsets(v.str());
      chars.reserve(off.size());
      for (size_t i = 0; i + 1 < off.size(); ++i) chars.emplace_back(v.str().substr(off[i], off[i + 1] - off[i]));
      return chars;
    }
    default:
      break;
  }
  throw_type_error("'" + v.type_name() + "' object is not iterable");
}

int64_t length(const Value& v) {
  switch (v.kind()) {
    case Value::Kind::Undefined:
      return 0;
    case Value::Kind::String:
      return static_cast<int64_t>(unicode::length(v.str()));
    case Value::Kind::List:
      return static_cast<int64_t>(v.list().items.size());
    case Value::Kind::Dict:
      if (v.dict().type == DictData::Type::Dict) return static_cast<int64_t>(v.dict().size());
      break;
    default:
      break;
  }
  throw_type_error("object of type '" + v.type_name() + "' has no len()");
}

bool contains(const Value& container, const Value& item) {
  switch (container.kind()) {
    case Value::Kind::Undefined:
      return false;  // iterating Undefined yields nothing
    case Value::Kind::String:
      if (!item.is_string())
        throw_type_error("'in <string>' requires string as left operand, not " + item.type_name());
      return container.str().find(item.str()) != std::string::npos;
    case Value::Kind::List:
      for (const Value& e : container.list().items)
        if (values_equal(e, item)) return true;
      return false;
    case Value::Kind::Dict:
      if (container.dict().type == DictData::Type::Dict) return container.dict().find(item) != nullptr;
      break;
    default:
      break;
  }
  throw_type_error("argument of type '" + container.type_name() + "' is not iterable");
}

namespace {

int64_t slice_index(const Value& v, const char* what) {
  if (v.is_int() || v.is_bool()) return v.int_value();
  throw_type_error(std::string("slice indices must be integers or None or have an __index__ method") +
                   (what ? "" : ""));
}

}  // namespace

Value slice(const Value& v, const Value& start_v, const Value& stop_v, const Value& step_v) {
  int64_t step = 1;
  if (!step_v.is_none()) step = slice_index(step_v, "step");
  if (step == 0) throw_value_error("slice step cannot be zero");
  std::vector<size_t> off;
  int64_t n;
  if (v.is_string()) {
    off = unicode::offsets(v.str());
    n = static_cast<int64_t>(off.size()) - 1;
  } else if (v.is_list()) {
    n = static_cast<int64_t>(v.list().items.size());
  } else {
    throw_type_error("'" + v.type_name() + "' object is not subscriptable");
  }
  // Python's PySlice_AdjustIndices.
  auto adjust = [&](const Value& x, int64_t dflt_pos, int64_t dflt_neg) -> int64_t {
    if (x.is_none()) return step > 0 ? dflt_pos : dflt_neg;
    int64_t i = slice_index(x, nullptr);
    if (i < 0) {
      i += n;
      if (i < 0) i = step < 0 ? -1 : 0;
    } else if (i >= n) {
      i = step < 0 ? n - 1 : n;
    }
    return i;
  };
  const int64_t start = adjust(start_v, 0, n - 1);
  const int64_t stop = adjust(stop_v, n, -1);
  std::vector<int64_t> idx;
  if (step > 0)
    for (int64_t i = start; i < stop; i += step) idx.push_back(i);
  else
    for (int64_t i = start; i > stop; i += step) idx.push_back(i);
  if (v.is_string()) {
    std::string out;
    for (int64_t i : idx) out.append(v.str(), off[i], off[i + 1] - off[i]);
    return Value(std::move(out));
  }
  std::vector<Value> items;
  items.reserve(idx.size());
  for (int64_t i : idx) items.push_back(v.list().items[i]);
  return Value::make_list(std::move(items), v.is_tuple());
}

}  // namespace py

// ---------------------------------------------------------------------------

const Value* Scope::lookup(const std::string& name) const {
  for (const Scope* s = this; s; s = s->parent.get()) {
    auto it = s->vars.find(name);
    if (it != s->vars.end()) return &it->second;
  }
  return nullptr;
}

void Interpreter::count(int64_t n) {
  iterations_ += n;
  if (iterations_ > limits_.max_iterations)
    throw_limit_error("template exceeded " + std::to_string(limits_.max_iterations) + " loop iterations");
}

void Interpreter::check_size(size_t n) const {
  if (n > limits_.max_output_bytes)
    throw_limit_error("template output or value exceeds " + std::to_string(limits_.max_output_bytes) + " bytes");
}

void Interpreter::emit(const std::string& s) {
  check_size(out_->size() + s.size());
  out_->append(s);
}

std::string Interpreter::render(const Template& tmpl, const std::shared_ptr<Scope>& globals) {
  std::string out;
  out_ = &out;
  call_depth_ = 0;
  iterations_ = 0;
  // The template's own variables live in a scope above the caller's globals,
  // so `{% set messages = ... %}` shadows rather than alters the context.
  auto root = std::make_shared<Scope>();
  root->parent = globals;
  struct Cleanup {
    Interpreter& in;
    ~Cleanup() {
      for (Value& ns : in.namespaces_) {
        ns.dict().entries.clear();
        ns.dict().index.clear();
      }
      in.namespaces_.clear();
      in.captured_.clear();
      in.out_ = nullptr;
    }
  } cleanup{*this};
  exec_body(tmpl.body, root);
  return out;
}

std::string Interpreter::capture(const Body& body, const ScopePtr& scope) {
  std::string buf;
  std::string* saved = out_;
  out_ = &buf;
  try {
    exec_body(body, scope);
  } catch (...) {
    out_ = saved;
    throw;
  }
  out_ = saved;
  return buf;
}

// ---------------------------------------------------------------------------
// Statements

Interpreter::Flow Interpreter::exec_body(const Body& body, const ScopePtr& scope) {
  for (const auto& s : body) {
    const Flow f = exec(*s, scope);
    if (f != Flow::Normal) return f;
  }
  return Flow::Normal;
}

Interpreter::Flow Interpreter::exec(const Stmt& s, const ScopePtr& scope) {
  try {
    return exec_inner(s, scope);
  } catch (const TemplateError& e) {
    if (e.line() == 0) throw e.with_line(s.line);
    throw;
  }
}

Interpreter::Flow Interpreter::exec_inner(const Stmt& s, const ScopePtr& scope) {
  switch (s.kind) {
    case Stmt::Kind::Text:
      emit(static_cast<const ast::Text&>(s).text);
      return Flow::Normal;
    case Stmt::Kind::Output:
      emit(eval(*static_cast<const Output&>(s).expr, scope).to_str());
      return Flow::Normal;
    case Stmt::Kind::If: {
      const auto& n = static_cast<const If&>(s);
      for (const auto& [test, body] : n.branches)
        if (eval(*test, scope).truthy()) return exec_body(body, scope);
      return exec_body(n.else_body, scope);
    }
    case Stmt::Kind::For:
      exec_for(static_cast<const For&>(s), scope);
      return Flow::Normal;
    case Stmt::Kind::Set: {
      const auto& n = static_cast<const Set&>(s);
      assign(n.target, eval(*n.value, scope), *scope);
      return Flow::Normal;
    }
    case Stmt::Kind::SetBlock: {
      const auto& n = static_cast<const SetBlock&>(s);
      Value v(capture(n.body, scope));
      if (n.filter) v = eval_filter_chain(*n.filter, scope, v);
      assign(n.target, v, *scope);
      return Flow::Normal;
    }
    case Stmt::Kind::Macro: {
      const auto& n = static_cast<const Macro&>(s);
      scope->vars[n.name] =
          make_macro(n.name, n.params, n.body, scope, n.uses_varargs, n.uses_kwargs, n.uses_caller);
      return Flow::Normal;
    }
    case Stmt::Kind::CallBlock: {
      const auto& n = static_cast<const CallBlock&>(s);
      const auto& call = static_cast<const Call&>(*n.call);
      Value fn = eval(*call.callee, scope);
      CallArgs args = eval_args(call.args, scope);
      args.kwargs.emplace_back("caller",
                               make_macro("caller", n.params, n.body, scope, n.uses_varargs, n.uses_kwargs, false));
      emit(this->call(fn, args).to_str());
      return Flow::Normal;
    }
    case Stmt::Kind::FilterBlock: {
      const auto& n = static_cast<const FilterBlock&>(s);
      Value v(capture(n.body, std::make_shared<Scope>(Scope{scope, {}})));
      emit(eval_filter_chain(*n.filter, scope, v).to_str());
      return Flow::Normal;
    }
    case Stmt::Kind::Break:
      return Flow::Break;
    case Stmt::Kind::Continue:
      return Flow::Continue;
    case Stmt::Kind::With: {
      const auto& n = static_cast<const With&>(s);
      auto inner = std::make_shared<Scope>(Scope{scope, {}});
      for (const auto& [target, value] : n.assignments) assign(target, eval(*value, scope), *inner);
      exec_body(n.body, inner);
      return Flow::Normal;
    }
    case Stmt::Kind::Scope:
      return exec_body(static_cast<const ScopeBlock&>(s).body, scope);
  }
  return Flow::Normal;
}

std::vector<Value> Interpreter::iterate(const Value& v) {
  std::vector<Value> items = py::iterate(v);
  return items;
}

void Interpreter::exec_for(const For& s, const ScopePtr& scope) {
  std::vector<Value> items = iterate(eval(*s.iter, scope));
  if (s.filter) {
    // The loop filter sees the loop variable but not `loop`; it runs before
    // the loop so loop.length counts only the kept items.
    std::vector<Value> kept;
    for (Value& item : items) {
      count(1);
      auto tmp = std::make_shared<Scope>(Scope{scope, {}});
      assign(s.target, item, *tmp);
      if (eval(*s.filter, tmp).truthy()) kept.push_back(std::move(item));
    }
    items = std::move(kept);
  }
  if (items.empty()) {
    exec_body(s.else_body, scope);
    return;
  }
  run_loop(s, scope, std::move(items), 1);
}

void Interpreter::run_loop(const For& s, const ScopePtr& scope, std::vector<Value> items, int depth) {
  const int64_t n = static_cast<int64_t>(items.size());
  // One loop object per loop, updated in place each iteration (jinja2's
  // LoopContext is likewise a single mutable object). Entries are written
  // by position to keep iterations cheap.
  Value loop = Value::make_dict(DictData::Type::Loop);
  adopt_namespace(loop);  // loop.changed() may be handed the loop itself: a cycle
  DictData& d = loop.dict();
  static constexpr const char* kFields[] = {"index", "index0",   "revindex", "revindex0", "first",   "last",
                                            "length", "depth",   "depth0",   "previtem",  "nextitem"};
  for (const char* f : kFields) d.set(Value(f), Value::none());
  auto index = std::make_shared<int64_t>(0);
  auto last_changed = std::make_shared<std::optional<std::vector<Value>>>();
  d.set("cycle", Value::make_callable("cycle", [index](Interpreter&, CallArgs& a) -> Value {
          if (a.args.empty()) throw TemplateError("TypeError", "no items for cycling given");
          return a.args[static_cast<size_t>(*index) % a.args.size()];
        }));
  d.set("changed", Value::make_callable("changed", [last_changed](Interpreter&, CallArgs& a) -> Value {
          bool same = last_changed->has_value() && (*last_changed)->size() == a.args.size();
          for (size_t k = 0; same && k < a.args.size(); ++k) same = values_equal((**last_changed)[k], a.args[k]);
          if (same) return Value(false);
          *last_changed = a.args;
          return Value(true);
        }));
  if (s.recursive) {
    // loop(children) renders the same loop body one level deeper.
    const For* stmt = &s;
    std::weak_ptr<Scope> weak = scope;
    d.set("__call__", Value::make_callable("loop", [this, stmt, weak, depth](Interpreter&, CallArgs& a) -> Value {
            if (a.args.size() != 1) throw TemplateError("TypeError", "loop() takes exactly one argument");
            auto sc = weak.lock();
            if (!sc) throw TemplateError("TemplateRuntimeError", "loop called outside of its scope");
            if (call_depth_ + 1 > limits_.max_call_depth)
              throw_limit_error("recursion deeper than " + std::to_string(limits_.max_call_depth));
            ++call_depth_;
            std::string buf;
            std::string* saved = out_;
            out_ = &buf;
            try {
              std::vector<Value> sub = py::iterate(a.args[0]);
              if (!sub.empty()) run_loop(*stmt, sc, std::move(sub), depth + 1);
            } catch (...) {
              out_ = saved;
              --call_depth_;
              throw;
            }
            out_ = saved;
            --call_depth_;
            return Value(std::move(buf));
          }));
    captured_.push_back(scope);
  }
  for (int64_t i = 0; i < n; ++i) {
    count(1);
    *index = i;
    auto& e = d.entries;
    e[0].second = Value(i + 1);
    e[1].second = Value(i);
    e[2].second = Value(n - i);
    e[3].second = Value(n - i - 1);
    e[4].second = Value(i == 0);
    e[5].second = Value(i == n - 1);
    e[6].second = Value(n);
    e[7].second = Value(depth);
    e[8].second = Value(depth - 1);
    e[9].second = i > 0 ? items[i - 1] : Value::undefined("there is no previous item");
    e[10].second = i + 1 < n ? items[i + 1] : Value::undefined("there is no next item");
    auto iter_scope = std::make_shared<Scope>(Scope{scope, {}});
    assign(s.target, items[i], *iter_scope);
    iter_scope->vars["loop"] = loop;
    const Flow f = exec_body(s.body, iter_scope);
    if (f == Flow::Break) break;
  }
}

void Interpreter::assign(const Target& t, const Value& v, Scope& scope) {
  switch (t.kind) {
    case Target::Kind::Name:
      scope.vars[t.name] = v;
      return;
    case Target::Kind::NamespaceAttr: {
      const Value* ns = scope.lookup(t.name);
      if (!ns || !ns->is_dict() || ns->dict().type != DictData::Type::Namespace)
        throw TemplateError("TemplateRuntimeError", "cannot assign attribute on non-namespace object");
      ns->dict().set(Value(t.attr), v);
      return;
    }
    case Target::Kind::Tuple: {
      std::vector<Value> items = py::iterate(v);
      if (items.size() < t.items.size())
        throw_value_error("not enough values to unpack (expected " + std::to_string(t.items.size()) + ", got " +
                          std::to_string(items.size()) + ")");
      if (items.size() > t.items.size())
        throw_value_error("too many values to unpack (expected " + std::to_string(t.items.size()) + ")");
      for (size_t i = 0; i < items.size(); ++i) assign(t.items[i], items[i], scope);
      return;
    }
  }
}

Value Interpreter::make_macro(const std::string& name, const Params& params, const Body& body, const ScopePtr& scope,
                              bool catch_varargs, bool catch_kwargs, bool catch_caller) {
  captured_.push_back(scope);
  std::weak_ptr<Scope> weak = scope;
  const Params* p = &params;
  const Body* b = &body;
  NativeFn fn = [this, name, p, b, weak, catch_varargs, catch_kwargs, catch_caller](Interpreter&,
                                                                                    CallArgs& a) -> Value {
    ScopePtr closure = weak.lock();
    if (!closure) throw TemplateError("TemplateRuntimeError", "macro '" + name + "' called after its scope ended");
    if (call_depth_ + 1 > limits_.max_call_depth)
      throw_limit_error("macro recursion deeper than " + std::to_string(limits_.max_call_depth));
    auto local = std::make_shared<Scope>(Scope{closure, {}});
    const size_t np = p->names.size();
    if (a.args.size() > np && !catch_varargs)
      throw_type_error("macro '" + name + "' takes not more than " + std::to_string(np) + " argument(s)");
    std::vector<bool> bound(np, false);
    for (size_t i = 0; i < np && i < a.args.size(); ++i) {
      local->vars[p->names[i]] = a.args[i];
      bound[i] = true;
    }
    Value kwargs = Value::make_dict();
    Value caller;
    for (auto& [k, v] : a.kwargs) {
      size_t idx = np;
      for (size_t i = 0; i < np; ++i)
        if (p->names[i] == k) idx = i;
      if (idx < np) {
        if (bound[idx]) throw_type_error("macro '" + name + "' got multiple values for argument '" + k + "'");
        local->vars[k] = v;
        bound[idx] = true;
      } else if (k == "caller" && catch_caller) {
        caller = v;
      } else if (catch_kwargs) {
        kwargs.dict().set(Value(k), v);
      } else {
        throw_type_error("macro '" + name + "' takes no keyword argument '" + k + "'");
      }
    }
    // Defaults are evaluated in the macro's own scope, after the arguments
    // before them are bound, as jinja2 does.
    for (size_t i = 0; i < np; ++i) {
      if (bound[i]) continue;
      if (p->defaults[i])
        local->vars[p->names[i]] = eval(*p->defaults[i], local);
      else
        local->vars[p->names[i]] = Value::undefined("parameter '" + p->names[i] + "' was not provided");
    }
    if (catch_varargs) {
      std::vector<Value> extra;
      for (size_t i = np; i < a.args.size(); ++i) extra.push_back(a.args[i]);
      local->vars["varargs"] = Value::make_list(std::move(extra), true);
    }
    if (catch_kwargs) local->vars["kwargs"] = kwargs;
    if (catch_caller) local->vars["caller"] = caller.is_undefined() ? Value::undefined("No caller defined") : caller;
    ++call_depth_;
    std::string out;
    try {
      out = capture(*b, local);
    } catch (...) {
      --call_depth_;
      throw;
    }
    --call_depth_;
    return Value(std::move(out));
  };
  return Value::make_callable(name, std::move(fn), true);
}

// ---------------------------------------------------------------------------
// Expressions

Value Interpreter::eval(const Expr& e, const ScopePtr& scope) {
  try {
    return eval_inner(e, scope);
  } catch (const TemplateError& err) {
    if (err.line() == 0) throw err.with_line(e.line);
    throw;
  }
}

CallArgs Interpreter::eval_args(const Args& a, const ScopePtr& scope) {
  CallArgs out;
  for (const auto& p : a.positional) out.args.push_back(eval(*p, scope));
  if (a.star) {
    for (Value& v : py::iterate(eval(*a.star, scope))) out.args.push_back(std::move(v));
  }
  for (const auto& [k, v] : a.keyword) out.kwargs.emplace_back(k, eval(*v, scope));
  if (a.double_star) {
    Value d = eval(*a.double_star, scope);
    if (!d.is_mapping()) throw_type_error("argument after ** must be a mapping, not " + d.type_name());
    for (const auto& [k, v] : d.dict().entries) {
      if (!k.is_string()) throw_type_error("keywords must be strings");
      out.kwargs.emplace_back(k.str(), v);
    }
  }
  return out;
}

Value Interpreter::eval_filter_chain(const Expr& e, const ScopePtr& scope, const Value& input) {
  const auto& f = static_cast<const ast::Filter&>(e);
  Value base = f.obj ? eval_filter_chain(*f.obj, scope, input) : input;
  CallArgs args = eval_args(f.args, scope);
  return apply_filter(f.name, base, args);
}

Value Interpreter::apply_filter(const std::string& name, const Value& v, CallArgs& args) {
  Value out;
  if (!builtins::call_filter(*this, name, v, args, &out))
    throw TemplateError("TemplateAssertionError", "No filter named '" + name + "'.");
  return out;
}

bool Interpreter::apply_test(const std::string& name, const Value& v, CallArgs& args) {
  bool out = false;
  if (!builtins::call_test(*this, name, v, args, &out))
    throw TemplateError("TemplateAssertionError", "No test named '" + name + "'.");
  return out;
}

Value Interpreter::call(const Value& fn, CallArgs& args) {
  if (fn.is_callable()) return fn.fn().fn(*this, args);
  if (fn.is_undefined()) py::fail_undefined(fn);
  if (fn.is_dict() && fn.dict().type == DictData::Type::Loop) {
    if (const Value* c = fn.dict().find_str("__call__")) return c->fn().fn(*this, args);
    throw_type_error("The loop must be marked as recursive to be called");
  }
  throw_type_error("'" + fn.type_name() + "' object is not callable");
}

namespace {

std::string object_desc(const Value& obj) {
  if (obj.is_none()) return "None";
  return obj.type_name() + " object";
}

}  // namespace

Value Interpreter::getattr(const Value& obj, const std::string& name) {
  if (obj.is_undefined()) py::fail_undefined(obj);
  if (!name.empty() && name[0] == '_')
    return Value::undefined("access to attribute '" + name + "' of '" + obj.type_name() + "' object is unsafe.");
  if (auto m = builtins::method(obj, name)) return *m;
  if (obj.is_dict()) {
    if (const Value* v = obj.dict().find_str(name)) return *v;
  }
  return Value::undefined("'" + object_desc(obj) + "' has no attribute " + repr_string(name));
}

Value Interpreter::getitem(const Value& obj, const Value& key) {
  if (obj.is_undefined()) py::fail_undefined(obj);
  if (obj.is_mapping()) {
    if (const Value* v = obj.dict().find(key)) return *v;
  } else if ((obj.is_list() || obj.is_string()) && (key.is_int() || key.is_bool())) {
    const int64_t n = obj.is_list() ? static_cast<int64_t>(obj.list().items.size()) : py::length(obj);
    int64_t i = key.int_value();
    if (i < 0) i += n;
    if (i >= 0 && i < n) {
      if (obj.is_list()) return obj.list().items[i];
      if (unicode::is_ascii(obj.str())) return Value(obj.str().substr(i, 1));
      const auto off = unicode::offsets(obj.str());
      return Value(obj.str().substr(off[i], off[i + 1] - off[i]));
    }
  }
  // jinja2 falls back to attribute lookup for string keys.
  if (key.is_string()) return getattr(obj, key.str());
  return Value::undefined(object_desc(obj) + " has no element " + key.repr());
}

Value Interpreter::eval_inner(const Expr& e, const ScopePtr& scope) {
  switch (e.kind) {
    case Expr::Kind::Literal:
      return static_cast<const Literal&>(e).value;
    case Expr::Kind::Name: {
      const auto& n = static_cast<const Name&>(e);
      if (const Value* v = scope->lookup(n.name)) return *v;
      return Value::undefined(repr_string(n.name) + " is undefined");
    }
    case Expr::Kind::List: {
      const auto& n = static_cast<const ListExpr&>(e);
      std::vector<Value> items;
      items.reserve(n.items.size());
      for (const auto& i : n.items) items.push_back(eval(*i, scope));
      return Value::make_list(std::move(items), n.tuple);
    }
    case Expr::Kind::Dict: {
      const auto& n = static_cast<const DictExpr&>(e);
      Value d = Value::make_dict();
      for (const auto& [k, v] : n.items) {
        Value key = eval(*k, scope);
        d.dict().set(key, eval(*v, scope));
      }
      return d;
    }
    case Expr::Kind::GetAttr: {
      const auto& n = static_cast<const GetAttr&>(e);
      return getattr(eval(*n.obj, scope), n.name);
    }
    case Expr::Kind::GetItem: {
      const auto& n = static_cast<const GetItem&>(e);
      Value obj = eval(*n.obj, scope);
      if (n.index->kind == Expr::Kind::Slice) {
        const auto& sl = static_cast<const Slice&>(*n.index);
        auto part = [&](const ExprPtr& p) { return p ? eval(*p, scope) : Value::none(); };
        Value a = part(sl.start), b = part(sl.stop), c = part(sl.step);
        if (obj.is_undefined()) py::fail_undefined(obj);
        return py::slice(obj, a, b, c);
      }
      return getitem(obj, eval(*n.index, scope));
    }
    case Expr::Kind::Slice:
      throw TemplateError("TemplateSyntaxError", "slice outside of a subscript");
    case Expr::Kind::Call: {
      const auto& n = static_cast<const Call&>(e);
      Value fn = eval(*n.callee, scope);
      CallArgs args = eval_args(n.args, scope);
      return call(fn, args);
    }
    case Expr::Kind::Filter: {
      const auto& n = static_cast<const ast::Filter&>(e);
      Value v = n.obj ? eval(*n.obj, scope) : Value();
      CallArgs args = eval_args(n.args, scope);
      return apply_filter(n.name, v, args);
    }
    case Expr::Kind::Test: {
      const auto& n = static_cast<const ast::Test&>(e);
      Value v = eval(*n.obj, scope);
      CallArgs args = eval_args(n.args, scope);
      return Value(apply_test(n.name, v, args));
    }
    case Expr::Kind::Unary: {
      const auto& n = static_cast<const Unary&>(e);
      Value v = eval(*n.operand, scope);
      if (n.op == "not") return Value(!v.truthy());
      if (v.is_undefined()) py::fail_undefined(v);
      if (v.is_float()) return Value(n.op == "-" ? -v.as_float() : v.as_float());
      if (v.is_int() || v.is_bool()) {
        const int64_t i = v.int_value();
        if (n.op == "-" && i == std::numeric_limits<int64_t>::min()) throw_limit_error("integer overflow");
        return Value(n.op == "-" ? -i : i);
      }
      throw_type_error("bad operand type for unary " + n.op + ": '" + v.type_name() + "'");
    }
    case Expr::Kind::Binary:
      return eval_binary(static_cast<const Binary&>(e), scope);
    case Expr::Kind::Compare:
      return eval_compare(static_cast<const Compare&>(e), scope);
    case Expr::Kind::Cond: {
      const auto& n = static_cast<const Cond&>(e);
      if (eval(*n.test, scope).truthy()) return eval(*n.then, scope);
      if (n.otherwise) return eval(*n.otherwise, scope);
      return Value::undefined("the inline if-expression on line " + std::to_string(e.line) +
                              " evaluated to false and no else section was defined.");
    }
  }
  return Value();
}

Value Interpreter::eval_compare(const Compare& c, const ScopePtr& scope) {
  Value left = eval(*c.first, scope);
  for (const auto& [op, expr] : c.rest) {
    Value right = eval(*expr, scope);
    bool ok;
    if (op == "==") {
      ok = values_equal(left, right);
    } else if (op == "!=") {
      ok = !values_equal(left, right);
    } else if (op == "in") {
      ok = py::contains(right, left);
    } else if (op == "notin") {
      ok = !py::contains(right, left);
    } else if ((left.is_float() && std::isnan(left.as_float())) ||
               (right.is_float() && std::isnan(right.as_float()))) {
      ok = false;  // every ordering with NaN is false in Python
    } else {
      if (left.is_undefined()) py::fail_undefined(left);
      if (right.is_undefined()) py::fail_undefined(right);
      const int r = compare_values(left, right);
      ok = op == "<" ? r < 0 : op == "<=" ? r <= 0 : op == ">" ? r > 0 : r >= 0;
    }
    if (!ok) return Value(false);
    left = std::move(right);
  }
  return Value(true);
}

Value Interpreter::eval_binary(const Binary& b, const ScopePtr& scope) {
  if (b.op == "and") {
    Value l = eval(*b.left, scope);
    return l.truthy() ? eval(*b.right, scope) : l;
  }
  if (b.op == "or") {
    Value l = eval(*b.left, scope);
    return l.truthy() ? l : eval(*b.right, scope);
  }
  Value l = eval(*b.left, scope);
  Value r = eval(*b.right, scope);
  return binary_op(*this, b.op, l, r);
}

}  // namespace oscar::chat
