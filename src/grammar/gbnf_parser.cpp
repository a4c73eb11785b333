// GBNF text -> Grammar. A recursive-descent parser over the raw bytes that
// keeps its byte offset so every error can name a line and column.
#include <algorithm>
#include <functional>
#include <limits>
#include <map>

#include "grammar/grammar.h"

namespace oscar::grammar {

namespace {

constexpr uint64_t kUnbounded = std::numeric_limits<uint64_t>::max();
// Upper bounds that keep a hostile grammar from exhausting memory: the
// repetition {m,n} is expanded into copies, so both are checked.
constexpr uint64_t kMaxRepeat = 10000;
constexpr size_t kMaxElements = 4u << 20;
constexpr int kMaxNesting = 500;

bool is_name_char(char c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '-' || c == '_';
}

using Sequence = std::vector<Element>;
using Alternatives = std::vector<Sequence>;

class Parser {
 public:
  explicit Parser(std::string_view text) : s_(text) {}

  Grammar run() {
    skip_space(true);
    while (!eof()) {
      parse_rule();
      skip_space(true);
    }
    return finish();
  }

 private:
  std::string_view s_;
  size_t pos_ = 0;
  std::map<std::string, uint32_t, std::less<>> ids_;
  std::vector<std::string> names_;
  std::vector<Alternatives> rules_;
  std::vector<bool> defined_;
  std::vector<size_t> first_ref_;  // byte offset of a rule's first reference
  std::vector<CharClass> classes_;
  size_t n_elements_ = 0;
  int depth_ = 0;  // open groups (the parser recurses into each)

  bool eof() const { return pos_ >= s_.size(); }
  char peek() const { return eof() ? '\0' : s_[pos_]; }

  [[noreturn]] void fail(const std::string& msg, size_t at) const {
    int line = 1, col = 1;
    for (size_t i = 0; i < at && i < s_.size(); ++i) {
      if (s_[i] == '\n') {
        line++;
        col = 1;
      } else if (((unsigned char)s_[i] & 0xC0) != 0x80) {
        col++;  // count code points, not bytes
      }
    }
    throw GrammarError(msg, line, col);
  }
  [[noreturn]] void fail(const std::string& msg) const { fail(msg, pos_); }

  void skip_space(bool newline_ok) {
    while (!eof()) {
      const char c = s_[pos_];
      if (c == '#') {
        while (!eof() && s_[pos_] != '\n' && s_[pos_] != '\r') pos_++;
      } else if (c == ' ' || c == '\t' || (newline_ok && (c == '\n' || c == '\r'))) {
        pos_++;
      } else {
        break;
      }
    }
  }

  uint32_t symbol(std::string_view name, size_t at) {
    auto it = ids_.find(name);
    if (it != ids_.end()) return it->second;
    const uint32_t id = (uint32_t)names_.size();
    ids_.emplace(std::string(name), id);
    names_.emplace_back(name);
    rules_.emplace_back();
    defined_.push_back(false);
    first_ref_.push_back(at);
    return id;
  }

  uint32_t new_rule(const std::string& base, Alternatives alts) {
    std::string name = base + "_" + std::to_string(names_.size());
    while (ids_.count(name)) name += "_";
    const uint32_t id = symbol(name, pos_);
    rules_[id] = std::move(alts);
    defined_[id] = true;
    return id;
  }

  std::string_view parse_name() {
    const size_t start = pos_;
    while (!eof() && is_name_char(s_[pos_])) pos_++;
    if (pos_ == start) fail("expected a rule name");
    return s_.substr(start, pos_ - start);
  }

  uint64_t parse_int() {
    const size_t start = pos_;
    uint64_t v = 0;
    while (!eof() && s_[pos_] >= '0' && s_[pos_] <= '9') {
      v = v * 10 + (uint64_t)(s_[pos_] - '0');
      if (v > kMaxRepeat) fail("repetition count too large (the limit is " + std::to_string(kMaxRepeat) + ")", start);
      pos_++;
    }
    if (pos_ == start) fail("expected an integer");
    return v;
  }

  uint32_t parse_hex(int digits) {
    uint32_t v = 0;
    for (int i = 0; i < digits; ++i) {
      const char c = peek();
      int d;
      if (c >= '0' && c <= '9') d = c - '0';
      else if (c >= 'a' && c <= 'f') d = c - 'a' + 10;
      else if (c >= 'A' && c <= 'F') d = c - 'A' + 10;
      else fail("expected " + std::to_string(digits) + " hex digits");
      v = v * 16 + (uint32_t)d;
      pos_++;
    }
    if (v > 0x10FFFF) fail("code point out of range");
    return v;
  }

  // One character of a literal or class, escapes resolved.
  uint32_t parse_char() {
    if (peek() == '\\') {
      const size_t at = pos_;
      pos_++;
      const char c = peek();
      pos_++;
      switch (c) {
        case 'x': return parse_hex(2);
        case 'u': return parse_hex(4);
        case 'U': return parse_hex(8);
        case 't': return '\t';
        case 'r': return '\r';
        case 'n': return '\n';
        case '\\': case '"': case '[': case ']': case '-': case '^': case '/': case '.': case '\'':
          return (uint32_t)(unsigned char)c;
        default: fail("unknown escape", at);
      }
    }
    size_t i = pos_;
    const uint32_t cp = decode_utf8(s_, i);
    if (cp == UINT32_MAX) fail("invalid UTF-8");
    pos_ = i;
    return cp;
  }

  uint32_t add_class(CharClass c) {
    classes_.push_back(std::move(c));
    return (uint32_t)classes_.size() - 1;
  }

  void count(size_t n) {
    n_elements_ += n;
    if (n_elements_ > kMaxElements) fail("grammar too large after expanding repetitions");
  }

  void parse_rule() {
    const size_t at = pos_;
    const std::string_view name = parse_name();
    skip_space(false);
    if (s_.substr(pos_, 3) != "::=") fail("expected '::='");
    pos_ += 3;
    skip_space(true);
    const uint32_t id = symbol(name, at);
    if (defined_[id]) fail("rule '" + std::string(name) + "' is defined twice", at);
    defined_[id] = true;
    rules_[id] = parse_alternates(std::string(name), false);
    if (peek() == '\r') pos_++;
    if (peek() == '\n') {
      pos_++;
    } else if (!eof()) {
      fail(std::string("unexpected character '") + peek() + "'");
    }
  }

  Alternatives parse_alternates(const std::string& rule, bool nested) {
    Alternatives alts;
    alts.push_back(parse_sequence(rule, nested));
    while (peek() == '|') {
      pos_++;
      skip_space(true);
      alts.push_back(parse_sequence(rule, nested));
    }
    return alts;
  }

  Sequence parse_sequence(const std::string& rule, bool nested) {
    Sequence seq;
    size_t last = SIZE_MAX;  // start of the last item, for postfix operators
    while (!eof()) {
      const char c = peek();
      if (c == '"') {
        pos_++;
        last = seq.size();
        while (peek() != '"') {
          if (eof()) fail("unterminated string literal");
          const uint32_t cp = parse_char();
          seq.push_back({ElemKind::Char, add_class({{{cp, cp}}, false})});
          count(1);
        }
        pos_++;
      } else if (c == '[') {
        seq.push_back({ElemKind::Char, add_class(parse_class())});
        last = seq.size() - 1;
        count(1);
      } else if (c == '.') {
        pos_++;
        last = seq.size();
        seq.push_back({ElemKind::Char, add_class({{}, true})});
        count(1);
      } else if (c == '(') {
        if (++depth_ > kMaxNesting) fail("groups nested too deeply");
        pos_++;
        skip_space(true);
        Alternatives alts = parse_alternates(rule, true);
        if (peek() != ')') fail("expected ')'");
        pos_++;
        depth_--;
        last = seq.size();
        seq.push_back({ElemKind::Rule, new_rule(rule, std::move(alts))});
        count(1);
      } else if (is_name_char(c)) {
        const size_t at = pos_;
        const std::string_view ref = parse_name();
        last = seq.size();
        seq.push_back({ElemKind::Rule, symbol(ref, at)});
        count(1);
      } else if (c == '*' || c == '+' || c == '?' || c == '{') {
        if (last == SIZE_MAX || last >= seq.size()) fail(std::string("'") + c + "' has nothing before it to repeat");
        uint64_t lo = 0, hi = kUnbounded;
        pos_++;
        if (c == '+') lo = 1;
        else if (c == '?') hi = 1;
        else if (c == '{') parse_braces(lo, hi);
        repeat(rule, seq, last, lo, hi);
        last = SIZE_MAX;  // "a**" is an error, as in llama.cpp
      } else {
        break;
      }
      skip_space(nested);
    }
    return seq;
  }

  void parse_braces(uint64_t& lo, uint64_t& hi) {
    skip_space(false);
    lo = parse_int();
    skip_space(false);
    hi = lo;
    if (peek() == ',') {
      pos_++;
      skip_space(false);
      hi = (peek() >= '0' && peek() <= '9') ? parse_int() : kUnbounded;
      skip_space(false);
    }
    if (peek() != '}') fail("expected '}'");
    pos_++;
    if (hi < lo) fail("repetition maximum is below its minimum");
  }

  CharClass parse_class() {
    const size_t at = pos_;
    pos_++;  // '['
    CharClass cls;
    if (peek() == '^') {
      cls.negated = true;
      pos_++;
    }
    while (peek() != ']') {
      if (eof()) fail("unterminated character class", at);
      const uint32_t lo = parse_char();
      uint32_t hi = lo;
      if (peek() == '-' && pos_ + 1 < s_.size() && s_[pos_ + 1] != ']') {
        pos_++;
        hi = parse_char();
        if (hi < lo) fail("character range is backwards");
      }
      cls.ranges.push_back({lo, hi});
    }
    pos_++;
    return cls;
  }

  // Replaces seq[last..] (one item) with the expansion of item{lo,hi}.
  void repeat(const std::string& rule, Sequence& seq, size_t last, uint64_t lo, uint64_t hi) {
    Sequence item(seq.begin() + (long)last, seq.end());
    seq.resize(last);
    Element x = item.size() == 1 ? item[0] : Element{ElemKind::Rule, new_rule(rule, {item})};
    count((size_t)(lo + (hi == kUnbounded ? 1 : hi - lo)) * 3);
    for (uint64_t i = 0; i < lo; ++i) seq.push_back(x);
    if (hi == kUnbounded) {
      // S ::= x S | ""
      const uint32_t s = new_rule(rule, {});
      rules_[s] = {{x, {ElemKind::Rule, s}}, {}};
      seq.push_back({ElemKind::Rule, s});
    } else if (hi > lo) {
      // O1 ::= x | "" ; Ok ::= x O(k-1) | ""  (nested, so at most hi-lo more)
      uint32_t prev = new_rule(rule, {{x}, {}});
      for (uint64_t k = 1; k < hi - lo; ++k) prev = new_rule(rule, {{x, {ElemKind::Rule, prev}}, {}});
      seq.push_back({ElemKind::Rule, prev});
    }
  }

  Grammar finish();
  void check_left_recursion() const;
};

void Parser::check_left_recursion() const {
  const size_t n = rules_.size();
  // Nullable rules (can match the empty string), to a fixpoint.
  std::vector<bool> nullable(n, false);
  for (bool changed = true; changed;) {
    changed = false;
    for (size_t r = 0; r < n; ++r) {
      if (nullable[r]) continue;
      for (const Sequence& alt : rules_[r]) {
        const bool all = std::all_of(alt.begin(), alt.end(), [&](const Element& e) {
          return e.kind == ElemKind::Rule && nullable[e.value];
        });
        if (all) {
          nullable[r] = true;
          changed = true;
          break;
        }
      }
    }
  }
  // Edge r -> s when s can be the first thing r expands to. A cycle of such
  // edges loops the matcher's expansion forever if it grows the stack, i.e.
  // if some edge on it is not the last element of its alternative; a cycle
  // of tail references only ("(x*)*") revisits the same stack, which the
  // matcher de-duplicates. So: reject an SCC that holds a non-tail edge.
  struct Edge {
    uint32_t to;
    bool tail;
  };
  std::vector<std::vector<Edge>> first(n);
  for (size_t r = 0; r < n; ++r)
    for (const Sequence& alt : rules_[r])
      for (size_t i = 0; i < alt.size(); ++i) {
        const Element& e = alt[i];
        if (e.kind != ElemKind::Rule) break;
        first[r].push_back({e.value, i + 1 == alt.size()});
        if (!nullable[e.value]) break;
      }
  // Tarjan's strongly connected components, iteratively.
  std::vector<int> index(n, -1), low(n, 0), comp(n, -1);
  std::vector<uint8_t> on_stack(n, 0);
  std::vector<uint32_t> tstack;
  std::vector<std::pair<uint32_t, size_t>> call;
  int counter = 0, n_comp = 0;
  for (uint32_t start = 0; start < n; ++start) {
    if (index[start] >= 0) continue;
    call.push_back({start, 0});
    while (!call.empty()) {
      auto& [v, i] = call.back();
      if (i == 0) {
        index[v] = low[v] = counter++;
        tstack.push_back(v);
        on_stack[v] = 1;
      }
      if (i < first[v].size()) {
        const uint32_t w = first[v][i++].to;
        if (index[w] < 0) {
          call.push_back({w, 0});
        } else if (on_stack[w]) {
          low[v] = std::min(low[v], index[w]);
        }
        continue;
      }
      if (low[v] == index[v]) {
        uint32_t w;
        do {
          w = tstack.back();
          tstack.pop_back();
          on_stack[w] = 0;
          comp[w] = n_comp;
        } while (w != v);
        n_comp++;
      }
      const uint32_t done = v;
      call.pop_back();
      if (!call.empty()) low[call.back().first] = std::min(low[call.back().first], low[done]);
    }
  }
  for (size_t r = 0; r < n; ++r)
    for (const Edge& e : first[r])
      if (!e.tail && comp[e.to] == comp[r])
        throw GrammarError("left recursion in rule '" + names_[r] +
                               "' (it reaches itself again before consuming any input)",
                           0, 0);
}

Grammar Parser::finish() {
  for (size_t r = 0; r < rules_.size(); ++r)
    if (!defined_[r]) fail("undefined rule '" + names_[r] + "'", first_ref_[r]);
  auto root = ids_.find("root");
  if (root == ids_.end()) throw GrammarError("grammar has no 'root' rule", 0, 0);
  check_left_recursion();
  Grammar g;
  g.root = root->second;
  g.rule_names = names_;
  g.classes = std::move(classes_);
  g.rule_alts.resize(rules_.size());
  for (size_t r = 0; r < rules_.size(); ++r)
    for (const Sequence& alt : rules_[r]) {
      g.rule_alts[r].push_back((uint32_t)g.elems.size());
      g.elems.insert(g.elems.end(), alt.begin(), alt.end());
      g.elems.push_back({ElemKind::End, 0});
    }
  return g;
}

}  // namespace

uint32_t decode_utf8(std::string_view s, size_t& i) {
  const unsigned char b0 = (unsigned char)s[i];
  int n;
  uint32_t cp;
  if (b0 < 0x80) {
    i++;
    return b0;
  } else if ((b0 & 0xE0) == 0xC0) {
    n = 1, cp = b0 & 0x1F;
  } else if ((b0 & 0xF0) == 0xE0) {
    n = 2, cp = b0 & 0x0F;
  } else if ((b0 & 0xF8) == 0xF0) {
    n = 3, cp = b0 & 0x07;
  } else {
    return UINT32_MAX;
  }
  if (i + (size_t)n >= s.size()) return UINT32_MAX;  // truncated
  for (int k = 1; k <= n; ++k) {
    const unsigned char b = (unsigned char)s[i + (size_t)k];
    if ((b & 0xC0) != 0x80) return UINT32_MAX;
    cp = (cp << 6) | (b & 0x3F);
  }
  static constexpr uint32_t kMin[4] = {0, 0x80, 0x800, 0x10000};
  if (cp < kMin[n] || cp > 0x10FFFF || (cp >= 0xD800 && cp <= 0xDFFF)) return UINT32_MAX;
  i += (size_t)n + 1;
  return cp;
}

bool CharClass::matches(uint32_t cp) const {
  bool in = false;
  for (const CharRange& r : ranges)
    if (cp >= r.lo && cp <= r.hi) {
      in = true;
      break;
    }
  return in != negated;
}

bool CharClass::intersects(uint32_t lo, uint32_t hi) const {
  if (!negated) {
    for (const CharRange& r : ranges)
      if (r.lo <= hi && lo <= r.hi) return true;
    return false;
  }
  // Some point of [lo, hi] outside every range: walk the covered prefix.
  uint32_t next = lo;
  for (bool moved = true; moved && next <= hi;) {
    moved = false;
    for (const CharRange& r : ranges)
      if (r.lo <= next && next <= r.hi) {
        if (r.hi >= hi) return false;
        next = r.hi + 1;
        moved = true;
      }
  }
  return next <= hi;
}

Grammar parse_gbnf(std::string_view text) { return Parser(text).run(); }

}  // namespace oscar::grammar
