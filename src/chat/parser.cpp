#include "chat/parser.h"

#include <set>

#include "chat/template_error.h"

namespace oscar::chat {

namespace {

using namespace ast;

class Parser {
 public:
  Parser(std::vector<Token> tokens, const ParserOptions& opt) : toks_(std::move(tokens)), opt_(opt) {}

  Template run() {
    Template t;
    t.body = subparse({});
    if (cur().type != TokenType::Eof) fail("unexpected tokens after the end of the template");
    return t;
  }

 private:
  // ---- token helpers ----
  const Token& cur() const { return toks_[pos_]; }
  const Token& look(size_t n = 1) const { return toks_[std::min(pos_ + n, toks_.size() - 1)]; }
  void next() {
    if (pos_ + 1 < toks_.size()) ++pos_;
  }
  bool is_op(const char* op) const { return cur().type == TokenType::Op && cur().text == op; }
  bool is_name(const char* n) const { return cur().type == TokenType::Name && cur().text == n; }
  bool skip_op(const char* op) {
    if (!is_op(op)) return false;
    next();
    return true;
  }
  bool skip_name(const char* n) {
    if (!is_name(n)) return false;
    next();
    return true;
  }
  [[noreturn]] void fail(const std::string& msg) const { throw TemplateError("TemplateSyntaxError", msg, cur().line); }
  std::string describe(const Token& t) const {
    switch (t.type) {
      case TokenType::Eof:
        return "end of template";
      case TokenType::VarEnd:
        return "end of print statement";
      case TokenType::BlockEnd:
        return "end of statement block";
      case TokenType::Text:
        return "template data";
      default:
        return t.text;
    }
  }
  void expect_op(const char* op) {
    if (!skip_op(op)) fail(std::string("expected token '") + op + "', got '" + describe(cur()) + "'");
  }
  std::string expect_name() {
    if (cur().type != TokenType::Name) fail("expected name, got '" + describe(cur()) + "'");
    std::string n = cur().text;
    next();
    return n;
  }
  void expect_block_end() {
    if (cur().type != TokenType::BlockEnd) fail("expected end of statement block, got '" + describe(cur()) + "'");
    next();
  }

  // Guards recursion on nested constructs.
  struct DepthGuard {
    Parser& p;
    explicit DepthGuard(Parser& parser) : p(parser) {
      if (++p.depth_ > p.opt_.max_nesting) p.fail("template nesting too deep (limit " + std::to_string(p.opt_.max_nesting) + ")");
    }
    ~DepthGuard() { --p.depth_; }
  };

  // Each link of an operator or postfix chain deepens the tree the
  // interpreter walks recursively, so chains count toward the nesting limit.
  void chain_link(int& links) {
    if (depth_ + ++links > opt_.max_nesting)
      fail("expression too deeply nested (limit " + std::to_string(opt_.max_nesting) + ")");
  }

  // ---- statements ----
  Body subparse(const std::set<std::string>& end_tokens) {
    DepthGuard guard(*this);
    Body body;
    for (;;) {
      const Token& t = cur();
      if (t.type == TokenType::Eof) {
        if (!end_tokens.empty()) {
          std::string want;
          for (const auto& e : end_tokens) want += (want.empty() ? "'" : " or '") + e + "'";
          fail("Unexpected end of template. Jinja was looking for the following tags: " + want + ".");
        }
        return body;
      }
      if (t.type == TokenType::Text) {
        body.push_back(std::make_unique<ast::Text>(t.text, t.line));
        next();
      } else if (t.type == TokenType::VarBegin) {
        const int line = t.line;
        next();
        ExprPtr e = parse_tuple(true, {}, false);
        if (cur().type != TokenType::VarEnd) fail("expected end of print statement, got '" + describe(cur()) + "'");
        next();
        body.push_back(std::make_unique<Output>(std::move(e), line));
      } else if (t.type == TokenType::BlockBegin) {
        next();
        if (cur().type == TokenType::Name && end_tokens.count(cur().text)) return body;
        body.push_back(parse_statement());
        expect_block_end();
      } else {
        fail("unexpected '" + describe(t) + "'");
      }
    }
  }

  // After the opening tag's name/arguments: `%}` body up to one of end_tokens.
  // Leaves the current token on the end tag's name unless drop_needle.
  Body parse_statements(const std::set<std::string>& end_tokens, bool drop_needle) {
    skip_op(":");
    expect_block_end();
    Body b = subparse(end_tokens);
    if (drop_needle) next();
    return b;
  }

  StmtPtr parse_statement() {
    if (cur().type != TokenType::Name) fail("tag name expected");
    const std::string tag = cur().text;
    const int line = cur().line;
    if (tag == "for") return parse_for();
    if (tag == "if") return parse_if();
    if (tag == "set") return parse_set();
    if (tag == "macro") return parse_macro();
    if (tag == "call") return parse_call_block();
    if (tag == "filter") return parse_filter_block();
    if (tag == "with") return parse_with();
    if (tag == "break" || tag == "continue") {
      if (loop_depth_ == 0) fail("'" + tag + "' outside of a loop");
      next();
      return std::make_unique<Simple>(tag == "break" ? Stmt::Kind::Break : Stmt::Kind::Continue, line);
    }
    if (tag == "generation" || tag == "block") {
      // {% generation %} (transformers) and a {% block %} without
      // inheritance both just render their body in place.
      next();
      if (tag == "block") expect_name();
      auto s = std::make_unique<ScopeBlock>(line);
      s->body = parse_statements({"end" + tag}, true);
      if (tag == "block" && cur().type == TokenType::Name) next();  // {% endblock name %}
      return s;
    }
    if (tag == "include" || tag == "import" || tag == "from" || tag == "extends" || tag == "autoescape" ||
        tag == "do" || tag == "trans" || tag == "print")
      fail("tag '" + tag + "' is not supported in chat templates");
    fail("Encountered unknown tag '" + tag + "'.");
  }

  StmtPtr parse_for() {
    auto s = std::make_unique<For>(cur().line);
    next();
    s->target = parse_assign_target(false, "in");
    if (!skip_name("in")) fail("expected 'in', got '" + describe(cur()) + "'");
    s->iter = parse_tuple(false, "recursive", false);
    if (skip_name("if")) s->filter = parse_expression(true);
    s->recursive = skip_name("recursive");
    ++loop_depth_;
    s->body = parse_statements({"endfor", "else"}, false);
    --loop_depth_;
    const std::string end = cur().text;
    next();
    if (end == "else") s->else_body = parse_statements({"endfor"}, true);
    return s;
  }

  StmtPtr parse_if() {
    auto s = std::make_unique<If>(cur().line);
    next();
    for (;;) {
      ExprPtr test = parse_tuple(false, {}, false);
      Body body = parse_statements({"elif", "else", "endif"}, false);
      s->branches.emplace_back(std::move(test), std::move(body));
      const std::string end = cur().text;
      next();
      if (end == "elif") continue;
      if (end == "else") s->else_body = parse_statements({"endif"}, true);
      break;
    }
    return s;
  }

  StmtPtr parse_set() {
    const int line = cur().line;
    next();
    Target target = parse_assign_target(true, {});
    if (skip_op("=")) {
      auto s = std::make_unique<Set>(line);
      s->target = std::move(target);
      s->value = parse_tuple(true, {}, false);
      return s;
    }
    auto s = std::make_unique<SetBlock>(line);
    s->target = std::move(target);
    if (is_op("|")) s->filter = parse_filter(nullptr, false);
    s->body = parse_statements({"endset"}, true);
    return s;
  }

  void parse_signature(Params& p) {
    expect_op("(");
    while (!is_op(")")) {
      if (!p.names.empty()) expect_op(",");
      std::string n = expect_name();
      ExprPtr def;
      if (skip_op("="))
        def = parse_expression(true);
      else if (!p.defaults.empty() && p.defaults.back())
        fail("non-default argument follows default argument");
      p.names.push_back(std::move(n));
      p.defaults.push_back(std::move(def));
    }
    expect_op(")");
  }

  StmtPtr parse_macro() {
    auto s = std::make_unique<Macro>(cur().line);
    next();
    s->name = expect_name();
    parse_signature(s->params);
    const int saved_loops = loop_depth_;
    loop_depth_ = 0;
    used_names_.emplace_back();
    s->body = parse_statements({"endmacro"}, true);
    s->uses_caller = used_names_.back().count("caller") > 0;
    s->uses_varargs = used_names_.back().count("varargs") > 0;
    s->uses_kwargs = used_names_.back().count("kwargs") > 0;
    used_names_.pop_back();
    loop_depth_ = saved_loops;
    return s;
  }

  StmtPtr parse_call_block() {
    auto s = std::make_unique<CallBlock>(cur().line);
    next();
    if (is_op("(")) parse_signature(s->params);
    ExprPtr call = parse_expression(true);
    if (call->kind != Expr::Kind::Call) fail("expected call");
    s->call = std::move(call);
    const int saved_loops = loop_depth_;
    loop_depth_ = 0;
    used_names_.emplace_back();
    s->body = parse_statements({"endcall"}, true);
    s->uses_varargs = used_names_.back().count("varargs") > 0;
    s->uses_kwargs = used_names_.back().count("kwargs") > 0;
    used_names_.pop_back();
    loop_depth_ = saved_loops;
    return s;
  }

  StmtPtr parse_filter_block() {
    auto s = std::make_unique<FilterBlock>(cur().line);
    next();
    s->filter = parse_filter(nullptr, true);
    s->body = parse_statements({"endfilter"}, true);
    return s;
  }

  StmtPtr parse_with() {
    auto s = std::make_unique<With>(cur().line);
    next();
    while (cur().type != TokenType::BlockEnd) {
      if (!s->assignments.empty()) expect_op(",");
      Target t = parse_assign_target(false, {});
      expect_op("=");
      s->assignments.emplace_back(std::move(t), parse_expression(true));
    }
    s->body = parse_statements({"endwith"}, true);
    return s;
  }

  // Names, tuples of names (optionally parenthesized), or ns.attr.
  Target parse_assign_target(bool with_namespace, const std::string& end_name) {
    if (with_namespace && cur().type == TokenType::Name && look().type == TokenType::Op && look().text == ".") {
      Target t;
      t.kind = Target::Kind::NamespaceAttr;
      t.name = expect_name();
      next();
      t.attr = expect_name();
      return t;
    }
    std::vector<Target> items;
    bool is_tuple = false;
    for (;;) {
      if (!items.empty()) expect_op(",");
      if (cur().type == TokenType::BlockEnd || is_op("=") || (!end_name.empty() && is_name(end_name.c_str())))
        break;
      items.push_back(parse_target_primary());
      if (is_op(","))
        is_tuple = true;
      else
        break;
    }
    if (items.empty()) fail("expected an assignment target, got '" + describe(cur()) + "'");
    if (!is_tuple) return std::move(items[0]);
    Target t;
    t.kind = Target::Kind::Tuple;
    t.items = std::move(items);
    return t;
  }

  Target parse_target_primary() {
    if (skip_op("(")) {
      DepthGuard guard(*this);
      Target t;
      t.kind = Target::Kind::Tuple;
      while (!is_op(")")) {
        if (!t.items.empty()) expect_op(",");
        if (is_op(")")) break;
        t.items.push_back(parse_target_primary());
      }
      expect_op(")");
      return t;
    }
    if (cur().type != TokenType::Name) fail("can't assign to '" + describe(cur()) + "'");
    const std::string& n = cur().text;
    if (n == "true" || n == "false" || n == "none" || n == "True" || n == "False" || n == "None")
      fail("can't assign to constant '" + n + "'");
    Target t;
    t.name = expect_name();
    return t;
  }

  // ---- expressions ----
  bool is_tuple_end(const std::string& extra_end) const {
    if (cur().type == TokenType::VarEnd || cur().type == TokenType::BlockEnd || cur().type == TokenType::Eof) return true;
    if (is_op(")")) return true;
    return !extra_end.empty() && is_name(extra_end.c_str());
  }

  ExprPtr parse_tuple(bool with_condexpr, const std::string& extra_end, bool explicit_parens) {
    const int line = cur().line;
    std::vector<ExprPtr> items;
    bool is_tuple = false;
    for (;;) {
      if (!items.empty()) expect_op(",");
      if (is_tuple_end(extra_end)) break;
      items.push_back(parse_expression(with_condexpr));
      if (is_op(","))
        is_tuple = true;
      else
        break;
    }
    if (!is_tuple) {
      if (!items.empty()) return std::move(items[0]);
      if (!explicit_parens) fail("Expected an expression, got '" + describe(cur()) + "'");
    }
    auto t = std::make_unique<ListExpr>(line);
    t->tuple = true;
    t->items = std::move(items);
    return t;
  }

  ExprPtr parse_expression(bool with_condexpr) {
    DepthGuard guard(*this);
    return with_condexpr ? parse_condexpr() : parse_or();
  }

  ExprPtr parse_condexpr() {
    DepthGuard guard(*this);
    ExprPtr e = parse_or();
    while (is_name("if")) {
      auto c = std::make_unique<Cond>(cur().line);
      next();
      c->test = parse_or();
      if (skip_name("else")) c->otherwise = parse_condexpr();
      c->then = std::move(e);
      e = std::move(c);
    }
    return e;
  }

  ExprPtr parse_or() {
    ExprPtr l = parse_and();
    int links = 0;
    while (is_name("or")) {
      chain_link(links);
      const int line = cur().line;
      next();
      l = std::make_unique<Binary>("or", std::move(l), parse_and(), line);
    }
    return l;
  }

  ExprPtr parse_and() {
    ExprPtr l = parse_not();
    int links = 0;
    while (is_name("and")) {
      chain_link(links);
      const int line = cur().line;
      next();
      l = std::make_unique<Binary>("and", std::move(l), parse_not(), line);
    }
    return l;
  }

  ExprPtr parse_not() {
    if (is_name("not")) {
      DepthGuard guard(*this);
      const int line = cur().line;
      next();
      return std::make_unique<Unary>("not", parse_not(), line);
    }
    return parse_compare();
  }

  ExprPtr parse_compare() {
    const int line = cur().line;
    ExprPtr first = parse_math1();
    std::unique_ptr<Compare> cmp;
    for (;;) {
      std::string op;
      if (cur().type == TokenType::Op &&
          (cur().text == "==" || cur().text == "!=" || cur().text == "<" || cur().text == "<=" || cur().text == ">" ||
           cur().text == ">=")) {
        op = cur().text;
        next();
      } else if (is_name("in")) {
        op = "in";
        next();
      } else if (is_name("not") && look().type == TokenType::Name && look().text == "in") {
        op = "notin";
        next();
        next();
      } else {
        break;
      }
      if (!cmp) cmp = std::make_unique<Compare>(std::move(first), line);
      cmp->rest.emplace_back(op, parse_math1());
    }
    if (cmp) return cmp;
    return first;
  }

  ExprPtr parse_math1() {
    ExprPtr l = parse_concat();
    int links = 0;
    while (is_op("+") || is_op("-")) {
      chain_link(links);
      const std::string op = cur().text;
      const int line = cur().line;
      next();
      l = std::make_unique<Binary>(op, std::move(l), parse_concat(), line);
    }
    return l;
  }

  ExprPtr parse_concat() {
    ExprPtr l = parse_math2();
    int links = 0;
    while (is_op("~")) {
      chain_link(links);
      const int line = cur().line;
      next();
      l = std::make_unique<Binary>("~", std::move(l), parse_math2(), line);
    }
    return l;
  }

  ExprPtr parse_math2() {
    ExprPtr l = parse_pow();
    int links = 0;
    while (is_op("*") || is_op("/") || is_op("//") || is_op("%")) {
      chain_link(links);
      const std::string op = cur().text;
      const int line = cur().line;
      next();
      l = std::make_unique<Binary>(op, std::move(l), parse_pow(), line);
    }
    return l;
  }

  ExprPtr parse_pow() {
    ExprPtr l = parse_unary(true);
    int links = 0;
    while (is_op("**")) {
      chain_link(links);
      const int line = cur().line;
      next();
      l = std::make_unique<Binary>("**", std::move(l), parse_unary(true), line);
    }
    return l;
  }

  ExprPtr parse_unary(bool with_filter) {
    DepthGuard guard(*this);
    ExprPtr node;
    const int line = cur().line;
    if (is_op("-") || is_op("+")) {
      const std::string op = cur().text;
      next();
      node = std::make_unique<Unary>(op, parse_unary(false), line);
    } else {
      node = parse_primary();
    }
    node = parse_postfix(std::move(node));
    if (with_filter) node = parse_filter_expr(std::move(node));
    return node;
  }

  ExprPtr parse_primary() {
    const Token& t = cur();
    const int line = t.line;
    switch (t.type) {
      case TokenType::Name: {
        const std::string n = t.text;
        next();
        if (n == "true" || n == "True") return std::make_unique<Literal>(Value(true), line);
        if (n == "false" || n == "False") return std::make_unique<Literal>(Value(false), line);
        if (n == "none" || n == "None") return std::make_unique<Literal>(Value::none(), line);
        for (auto& s : used_names_) s.insert(n);
        return std::make_unique<Name>(n, line);
      }
      case TokenType::String: {
        std::string s;
        while (cur().type == TokenType::String) {  // adjacent literals concatenate
          s += cur().text;
          next();
        }
        return std::make_unique<Literal>(Value(std::move(s)), line);
      }
      case TokenType::Int: {
        const int64_t v = t.ival;
        next();
        return std::make_unique<Literal>(Value(v), line);
      }
      case TokenType::Float: {
        const double v = t.fval;
        next();
        return std::make_unique<Literal>(Value(v), line);
      }
      case TokenType::Op:
        if (t.text == "(") {
          next();
          DepthGuard guard(*this);
          ExprPtr e = parse_tuple(true, {}, true);
          expect_op(")");
          return e;
        }
        if (t.text == "[") return parse_list();
        if (t.text == "{") return parse_dict();
        break;
      default:
        break;
    }
    fail("unexpected '" + describe(t) + "'");
  }

  ExprPtr parse_list() {
    DepthGuard guard(*this);
    auto l = std::make_unique<ListExpr>(cur().line);
    expect_op("[");
    while (!is_op("]")) {
      if (!l->items.empty()) expect_op(",");
      if (is_op("]")) break;
      l->items.push_back(parse_expression(true));
    }
    expect_op("]");
    return l;
  }

  ExprPtr parse_dict() {
    DepthGuard guard(*this);
    auto d = std::make_unique<DictExpr>(cur().line);
    expect_op("{");
    while (!is_op("}")) {
      if (!d->items.empty()) expect_op(",");
      if (is_op("}")) break;
      ExprPtr k = parse_expression(true);
      expect_op(":");
      d->items.emplace_back(std::move(k), parse_expression(true));
    }
    expect_op("}");
    return d;
  }

  ExprPtr parse_postfix(ExprPtr node) {
    int links = 0;
    for (;;) {
      chain_link(links);
      if (is_op(".") || is_op("["))
        node = parse_subscript(std::move(node));
      else if (is_op("("))
        node = parse_call(std::move(node));
      else
        return node;
    }
  }

  ExprPtr parse_filter_expr(ExprPtr node) {
    int links = 0;
    for (;;) {
      chain_link(links);
      if (is_op("|"))
        node = parse_filter(std::move(node), false);
      else if (is_name("is"))
        node = parse_test(std::move(node));
      else if (is_op("("))
        node = parse_call(std::move(node));
      else
        return node;
    }
  }

  ExprPtr parse_subscript(ExprPtr node) {
    const int line = cur().line;
    if (skip_op(".")) {
      if (cur().type == TokenType::Name) return std::make_unique<GetAttr>(std::move(node), expect_name(), line);
      if (cur().type != TokenType::Int) fail("expected name or number");
      auto idx = std::make_unique<Literal>(Value(cur().ival), line);
      next();
      return std::make_unique<GetItem>(std::move(node), std::move(idx), line);
    }
    expect_op("[");
    DepthGuard guard(*this);
    std::vector<ExprPtr> args;
    while (!is_op("]")) {
      if (!args.empty()) expect_op(",");
      args.push_back(parse_subscribed());
    }
    expect_op("]");
    if (args.empty()) fail("expected subscript expression");
    ExprPtr index;
    if (args.size() == 1) {
      index = std::move(args[0]);
    } else {
      auto t = std::make_unique<ListExpr>(line);
      t->tuple = true;
      t->items = std::move(args);
      index = std::move(t);
    }
    return std::make_unique<GetItem>(std::move(node), std::move(index), line);
  }

  ExprPtr parse_subscribed() {
    const int line = cur().line;
    auto s = std::make_unique<Slice>(line);
    if (!is_op(":")) {
      ExprPtr e = parse_expression(true);
      if (!is_op(":")) return e;
      s->start = std::move(e);
    }
    next();  // ':'
    if (!is_op(":") && !is_op("]") && !is_op(",")) s->stop = parse_expression(true);
    if (skip_op(":")) {
      if (!is_op("]") && !is_op(",")) s->step = parse_expression(true);
    }
    return s;
  }

  void parse_call_args(Args& a) {
    expect_op("(");
    bool require_comma = false;
    while (!is_op(")")) {
      if (require_comma) {
        expect_op(",");
        if (is_op(")")) break;
      }
      if (skip_op("*")) {
        if (a.star || a.double_star) fail("invalid syntax for function call expression");
        a.star = parse_expression(true);
      } else if (skip_op("**")) {
        if (a.double_star) fail("invalid syntax for function call expression");
        a.double_star = parse_expression(true);
      } else if (cur().type == TokenType::Name && look().type == TokenType::Op && look().text == "=") {
        if (a.double_star) fail("invalid syntax for function call expression");
        std::string key = cur().text;
        next();
        next();
        a.keyword.emplace_back(std::move(key), parse_expression(true));
      } else {
        if (a.star || a.double_star || !a.keyword.empty()) fail("invalid syntax for function call expression");
        a.positional.push_back(parse_expression(true));
      }
      require_comma = true;
    }
    expect_op(")");
  }

  ExprPtr parse_call(ExprPtr node) {
    DepthGuard guard(*this);
    auto c = std::make_unique<Call>(std::move(node), cur().line);
    parse_call_args(c->args);
    return c;
  }

  // `|name(args)` repeated; node may be null for filter blocks.
  ExprPtr parse_filter(ExprPtr node, bool start_inline) {
    while (is_op("|") || start_inline) {
      if (!start_inline) next();
      start_inline = false;
      const int line = cur().line;
      std::string name = expect_name();
      while (skip_op(".")) name += "." + expect_name();
      auto f = std::make_unique<Filter>(std::move(node), std::move(name), line);
      if (is_op("(")) {
        DepthGuard guard(*this);
        parse_call_args(f->args);
      }
      node = std::move(f);
    }
    return node;
  }

  ExprPtr parse_test(ExprPtr node) {
    const int line = cur().line;
    next();  // 'is'
    const bool negated = skip_name("not");
    std::string name = expect_name();
    while (skip_op(".")) name += "." + expect_name();
    auto t = std::make_unique<ast::Test>(std::move(node), std::move(name), line);
    const Token& c = cur();
    if (is_op("(")) {
      DepthGuard guard(*this);
      parse_call_args(t->args);
    } else if ((c.type == TokenType::Name || c.type == TokenType::String || c.type == TokenType::Int ||
                c.type == TokenType::Float || is_op("[") || is_op("{")) &&
               !is_name("else") && !is_name("or") && !is_name("and")) {
      if (is_name("is")) fail("You cannot chain multiple tests with is");
      ExprPtr arg = parse_primary();
      t->args.positional.push_back(parse_postfix(std::move(arg)));
    }
    if (negated) return std::make_unique<Unary>("not", std::move(t), line);
    return t;
  }

  std::vector<Token> toks_;
  size_t pos_ = 0;
  ParserOptions opt_;
  int depth_ = 0;
  int loop_depth_ = 0;
  std::vector<std::set<std::string>> used_names_;
};

}  // namespace

ast::Template parse_template(std::string_view source, const ParserOptions& opt) {
  return Parser(tokenize(source, opt.lexer), opt).run();
}

}  // namespace oscar::chat
