// Small helpers that write GBNF text: literals, and the grammar pieces the
// JSON Schema converter builds on (JSON string escaping of a regex, integer
// ranges as digit patterns).
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "core/error.h"

namespace oscar::grammar {

// A GBNF string literal that matches exactly `bytes` (UTF-8).
std::string gbnf_literal(std::string_view bytes);

// A GBNF expression for the JSON-encoded form of strings matching `pattern`
// (an ECMAScript regex subset: literals, ., [classes], \d \w \s and their
// negations, groups, |, ? * + {m,n}). The result matches what goes between
// the quotes of a JSON string. `char_rule` is the rule for one JSON string
// character (used for unanchored ends). Throws Error naming the construct it
// does not support.
std::string regex_to_gbnf(std::string_view pattern, const std::string& char_rule);

// A GBNF expression for the decimal integers in [lo, hi] (either end may be
// open), written without leading zeros or "-0".
std::string integer_range_gbnf(std::optional<int64_t> lo, std::optional<int64_t> hi);

}  // namespace oscar::grammar
