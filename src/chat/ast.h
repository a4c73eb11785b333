// Syntax tree of a parsed Jinja template. Nodes are plain structs tagged by
// kind; the interpreter switches on the kind. Every node records the template
// line it came from so runtime errors can name it.
#pragma once

#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "chat/value.h"

namespace oscar::chat::ast {

struct Expr;
struct Stmt;
using ExprPtr = std::unique_ptr<Expr>;
using StmtPtr = std::unique_ptr<Stmt>;
using Body = std::vector<StmtPtr>;

// Arguments of a call, filter or test.
struct Args {
  std::vector<ExprPtr> positional;
  std::vector<std::pair<std::string, ExprPtr>> keyword;
  ExprPtr star;         // *args
  ExprPtr double_star;  // **kwargs
};

struct Expr {
  enum class Kind {
    Literal,
    Name,
    List,     // list or tuple display
    Dict,
    GetAttr,  // obj.name
    GetItem,  // obj[index]
    Slice,    // only as a GetItem index
    Call,
    Filter,   // obj|name(args); obj is null inside {% filter %} / {% set x | f %}
    Test,     // obj is name(args)
    Unary,    // -x, +x, not x
    Binary,   // arithmetic, ~, and, or
    Compare,  // chained comparisons, in, not in
    Cond,     // a if cond else b
  };
  Kind kind;
  int line;
  Expr(Kind k, int l) : kind(k), line(l) {}
  virtual ~Expr() = default;
};

struct Literal : Expr {
  Value value;
  Literal(Value v, int l) : Expr(Kind::Literal, l), value(std::move(v)) {}
};
struct Name : Expr {
  std::string name;
  Name(std::string n, int l) : Expr(Kind::Name, l), name(std::move(n)) {}
};
struct ListExpr : Expr {
  std::vector<ExprPtr> items;
  bool tuple = false;
  explicit ListExpr(int l) : Expr(Kind::List, l) {}
};
struct DictExpr : Expr {
  std::vector<std::pair<ExprPtr, ExprPtr>> items;
  explicit DictExpr(int l) : Expr(Kind::Dict, l) {}
};
struct GetAttr : Expr {
  ExprPtr obj;
  std::string name;
  GetAttr(ExprPtr o, std::string n, int l) : Expr(Kind::GetAttr, l), obj(std::move(o)), name(std::move(n)) {}
};
struct GetItem : Expr {
  ExprPtr obj, index;
  GetItem(ExprPtr o, ExprPtr i, int l) : Expr(Kind::GetItem, l), obj(std::move(o)), index(std::move(i)) {}
};
struct Slice : Expr {
  ExprPtr start, stop, step;  // each may be null
  explicit Slice(int l) : Expr(Kind::Slice, l) {}
};
struct Call : Expr {
  ExprPtr callee;
  Args args;
  Call(ExprPtr c, int l) : Expr(Kind::Call, l), callee(std::move(c)) {}
};
struct Filter : Expr {
  ExprPtr obj;
  std::string name;
  Args args;
  Filter(ExprPtr o, std::string n, int l) : Expr(Kind::Filter, l), obj(std::move(o)), name(std::move(n)) {}
};
struct Test : Expr {
  ExprPtr obj;
  std::string name;
  Args args;
  Test(ExprPtr o, std::string n, int l) : Expr(Kind::Test, l), obj(std::move(o)), name(std::move(n)) {}
};
struct Unary : Expr {
  std::string op;  // "-", "+", "not"
  ExprPtr operand;
  Unary(std::string o, ExprPtr e, int l) : Expr(Kind::Unary, l), op(std::move(o)), operand(std::move(e)) {}
};
struct Binary : Expr {
  std::string op;  // + - * / // % ** ~ and or
  ExprPtr left, right;
  Binary(std::string o, ExprPtr a, ExprPtr b, int l)
      : Expr(Kind::Binary, l), op(std::move(o)), left(std::move(a)), right(std::move(b)) {}
};
struct Compare : Expr {
  ExprPtr first;
  std::vector<std::pair<std::string, ExprPtr>> rest;  // == != < <= > >= in notin
  Compare(ExprPtr f, int l) : Expr(Kind::Compare, l), first(std::move(f)) {}
};
struct Cond : Expr {
  ExprPtr test, then, otherwise;  // otherwise may be null (yields undefined)
  explicit Cond(int l) : Expr(Kind::Cond, l) {}
};

// Left-hand side of set/for/with.
struct Target {
  enum class Kind { Name, NamespaceAttr, Tuple };
  Kind kind = Kind::Name;
  std::string name;  // variable, or the namespace variable
  std::string attr;  // for NamespaceAttr
  std::vector<Target> items;
};

struct Stmt {
  enum class Kind { Text, Output, If, For, Set, SetBlock, Macro, CallBlock, FilterBlock, Break, Continue, With, Scope };
  Kind kind;
  int line;
  Stmt(Kind k, int l) : kind(k), line(l) {}
  virtual ~Stmt() = default;
};

struct Text : Stmt {
  std::string text;
  Text(std::string t, int l) : Stmt(Kind::Text, l), text(std::move(t)) {}
};
struct Output : Stmt {
  ExprPtr expr;
  Output(ExprPtr e, int l) : Stmt(Kind::Output, l), expr(std::move(e)) {}
};
struct If : Stmt {
  std::vector<std::pair<ExprPtr, Body>> branches;  // if + elifs
  Body else_body;
  explicit If(int l) : Stmt(Kind::If, l) {}
};
struct For : Stmt {
  Target target;
  ExprPtr iter, filter;  // filter may be null
  Body body, else_body;
  bool recursive = false;
  explicit For(int l) : Stmt(Kind::For, l) {}
};
struct Set : Stmt {
  Target target;
  ExprPtr value;
  explicit Set(int l) : Stmt(Kind::Set, l) {}
};
struct SetBlock : Stmt {
  Target target;
  ExprPtr filter;  // Filter chain with a null innermost obj, or null
  Body body;
  explicit SetBlock(int l) : Stmt(Kind::SetBlock, l) {}
};
// Parameters of a macro or of a call block's caller.
struct Params {
  std::vector<std::string> names;
  std::vector<ExprPtr> defaults;  // aligned with names; null when none
};
struct Macro : Stmt {
  std::string name;
  Params params;
  Body body;
  // Which implicit variables the body refers to; jinja2 only accepts extra
  // arguments when the body uses varargs/kwargs.
  bool uses_caller = false, uses_varargs = false, uses_kwargs = false;
  explicit Macro(int l) : Stmt(Kind::Macro, l) {}
};
struct CallBlock : Stmt {
  ExprPtr call;  // a Call expression
  Params params;
  Body body;
  bool uses_varargs = false, uses_kwargs = false;
  explicit CallBlock(int l) : Stmt(Kind::CallBlock, l) {}
};
struct FilterBlock : Stmt {
  ExprPtr filter;
  Body body;
  explicit FilterBlock(int l) : Stmt(Kind::FilterBlock, l) {}
};
struct With : Stmt {
  std::vector<std::pair<Target, ExprPtr>> assignments;
  Body body;
  explicit With(int l) : Stmt(Kind::With, l) {}
};
// A body rendered in place without a new scope ({% generation %} of
// transformers' AssistantTracker).
struct ScopeBlock : Stmt {
  Body body;
  explicit ScopeBlock(int l) : Stmt(Kind::Scope, l) {}
};
struct Simple : Stmt {  // break / continue
  Simple(Kind k, int l) : Stmt(k, l) {}
};

struct Template {
  Body body;
};

}  // namespace oscar::chat::ast
