// Shared helpers for the grammar tests.
#pragma once

#include <memory>
#include <string>
#include <string_view>

#include "grammar/grammar.h"
#include "grammar/matcher.h"

namespace oscar::grammar::testing {

inline std::shared_ptr<const Grammar> compile(std::string_view gbnf) {
  return std::make_shared<const Grammar>(parse_gbnf(gbnf));
}

// The whole string is a sentence of the grammar.
inline bool full_match(const std::shared_ptr<const Grammar>& g, std::string_view s) {
  Matcher m(g);
  return m.accept(s) && m.complete();
}

// Same, fed one byte at a time (partial UTF-8 between calls).
inline bool full_match_bytewise(const std::shared_ptr<const Grammar>& g, std::string_view s) {
  Matcher m(g);
  for (char c : s)
    if (!m.accept(std::string_view(&c, 1))) return false;
  return m.complete();
}

}  // namespace oscar::grammar::testing
