// A compiled context-free grammar over Unicode code points, the form the
// GBNF parser (gbnf_parser.cpp) produces and the matcher (matcher.h) runs.
//
// Every rule is a list of alternatives; every alternative is a sequence of
// elements stored in one flat array and closed by an End element, so a
// position in the grammar is a single index into `elems`. Repetitions,
// optionals and groups are already expanded into helper rules, so an element
// is only ever "one code point from a character class" or "one rule".
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "core/error.h"

namespace oscar::grammar {

struct CharRange {
  uint32_t lo, hi;  // inclusive
};

// A set of code points: the union of `ranges`, or its complement.
struct CharClass {
  std::vector<CharRange> ranges;
  bool negated = false;
  bool matches(uint32_t cp) const;
  // Whether some code point in [lo, hi] is in the set (used to reject a
  // partial UTF-8 sequence as soon as no completion can match).
  bool intersects(uint32_t lo, uint32_t hi) const;
};

enum class ElemKind : uint8_t { End, Char, Rule };

struct Element {
  ElemKind kind;
  uint32_t value;  // Char: index into Grammar::classes; Rule: rule index
};

struct Grammar {
  std::vector<Element> elems;                   // all alternatives, each closed by End
  std::vector<std::vector<uint32_t>> rule_alts; // rule -> start index of each alternative
  std::vector<std::string> rule_names;
  std::vector<CharClass> classes;
  uint32_t root = 0;
};

// A grammar that does not parse or is not usable (undefined rule, no root,
// left recursion). line and column are 1-based; 0 when the error is not
// tied to one place.
class GrammarError : public Error {
 public:
  GrammarError(const std::string& msg, int line, int column)
      : Error(line > 0 ? msg + " at line " + std::to_string(line) + ", column " + std::to_string(column) : msg),
        line_(line), column_(column) {}
  int line() const { return line_; }
  int column() const { return column_; }

 private:
  int line_, column_;
};

// Parses llama.cpp's GBNF: `name ::= alternatives` rules, "literals",
// [character classes] with ranges and ^negation, `.`, (groups), `? * +`,
// `{m}`, `{m,}`, `{m,n}`, `\x \u \U \t \n \r` escapes and # comments. The
// start rule is `root`. Throws GrammarError.
Grammar parse_gbnf(std::string_view text);

// Decodes one UTF-8 code point at s[i]; returns the code point and advances
// i, or returns UINT32_MAX for an invalid or truncated sequence.
uint32_t decode_utf8(std::string_view s, size_t& i);

}  // namespace oscar::grammar
