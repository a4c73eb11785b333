// Tree-walking interpreter for parsed Jinja templates, with jinja2's scoping
// (a fresh scope per loop iteration and macro call; `if` has none), its
// default Undefined, sandboxed attribute access (no underscore attributes,
// no mutating methods, as transformers' ImmutableSandboxedEnvironment) and
// hard limits so a hostile template ends with an error, not a hang or crash.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <unordered_map>
#include <vector>

#include "chat/ast.h"
#include "chat/value.h"

namespace oscar::chat {

struct RenderLimits {
  // Nested macro / caller / recursive-loop calls.
  int max_call_depth = 100;
  // Loop iterations plus items produced by range(), list building filters
  // and string repetition, over the whole render.
  int64_t max_iterations = 2'000'000;
  // Bytes of output, and of any single string or list built while rendering.
  size_t max_output_bytes = 32u << 20;
};

// A variable scope; scopes chain to their parent for lookups.
struct Scope {
  std::shared_ptr<Scope> parent;
  std::unordered_map<std::string, Value> vars;

  const Value* lookup(const std::string& name) const;
};

class Interpreter {
 public:
  explicit Interpreter(const RenderLimits& limits) : limits_(limits) {}

  // Renders `tmpl` with `globals` as the outermost scope. Throws TemplateError.
  std::string render(const ast::Template& tmpl, const std::shared_ptr<Scope>& globals);

  // ---- services for builtins (filters, tests, methods, globals) ----
  Value call(const Value& fn, CallArgs& args);
  Value apply_filter(const std::string& name, const Value& v, CallArgs& args);
  bool apply_test(const std::string& name, const Value& v, CallArgs& args);
  // jinja2 sandbox getattr / getitem.
  Value getattr(const Value& obj, const std::string& name);
  Value getitem(const Value& obj, const Value& key);
  // Counts work against max_iterations; throws LimitError beyond it.
  void count(int64_t n);
  // Throws LimitError if a string/list of n bytes/items would be too large.
  void check_size(size_t n) const;
  const RenderLimits& limits() const { return limits_; }
  // Registers a namespace() or loop object. They are the only mutable
  // values, hence the only way to build a reference cycle (`set ns.me = ns`);
  // they are emptied when the render ends so reference counting frees them.
  void adopt_namespace(const Value& ns) { namespaces_.push_back(ns); }

 private:
  enum class Flow { Normal, Break, Continue };
  using ScopePtr = std::shared_ptr<Scope>;

  Flow exec_body(const ast::Body& body, const ScopePtr& scope);
  Flow exec(const ast::Stmt& s, const ScopePtr& scope);
  Flow exec_inner(const ast::Stmt& s, const ScopePtr& scope);
  void exec_for(const ast::For& s, const ScopePtr& scope);
  void run_loop(const ast::For& s, const ScopePtr& scope, std::vector<Value> items, int depth);
  Value eval(const ast::Expr& e, const ScopePtr& scope);
  Value eval_inner(const ast::Expr& e, const ScopePtr& scope);
  Value eval_binary(const ast::Binary& b, const ScopePtr& scope);
  Value eval_compare(const ast::Compare& c, const ScopePtr& scope);
  Value eval_filter_chain(const ast::Expr& e, const ScopePtr& scope, const Value& input);
  CallArgs eval_args(const ast::Args& a, const ScopePtr& scope);
  void assign(const ast::Target& t, const Value& v, Scope& scope);
  Value make_macro(const std::string& name, const ast::Params& params, const ast::Body& body, const ScopePtr& scope,
                   bool catch_varargs, bool catch_kwargs, bool catch_caller);
  std::vector<Value> iterate(const Value& v);
  void emit(const std::string& s);
  std::string capture(const ast::Body& body, const ScopePtr& scope);

  RenderLimits limits_;
  std::string* out_ = nullptr;
  int call_depth_ = 0;
  int64_t iterations_ = 0;
  // Scopes captured by macros defined during this render: macros hold them
  // weakly (a scope holding its own macro would otherwise be a cycle), and
  // this list keeps them alive until the render ends.
  std::vector<ScopePtr> captured_;
  std::vector<Value> namespaces_;
};

// Python semantics shared by the interpreter and the builtins.
namespace py {
// Items of an iterable as Python's iter() yields them (dict: keys, str: code
// points, Undefined: nothing); TypeError otherwise.
std::vector<Value> iterate(const Value& v);
// Python len(); Undefined has length 0.
int64_t length(const Value& v);
// `item in container`.
bool contains(const Value& container, const Value& item);
// Python slice of a list/tuple/str.
Value slice(const Value& v, const Value& start, const Value& stop, const Value& step);
// Raises the UndefinedError an undefined value stands for.
[[noreturn]] void fail_undefined(const Value& v);
}  // namespace py

}  // namespace oscar::chat
