// libFuzzer target for the grammar module. The input is split at its first
// NUL byte: the first part is GBNF text (and, when it is JSON, also a JSON
// Schema), the second part is text to run through the matcher. Anything
// must either compile or be refused with oscar::Error — never crash, hang
// or read out of bounds — and a compiled grammar's whole-vocabulary mask
// must agree with checking each token on its own.
#include <cstdint>
#include <cstring>
#include <memory>
#include <string>

#include <nlohmann/json.hpp>

#include "core/error.h"
#include "grammar/grammar.h"
#include "grammar/json_schema_to_gbnf.h"
#include "grammar/matcher.h"
#include "grammar/token_constraint.h"

using namespace oscar;

namespace {

std::shared_ptr<const grammar::TokenTrie> small_vocab() {
  static auto trie = [] {
    std::vector<std::string> v = {"", "a", "b", "ab", "{", "}", "\"", " ", "\n", "0", "12", "\xC3", "\xA9",
                                  "\xC3\xA9", "[", "]", ",", ":", "true", "null", "\\", "x\"y"};
    return std::make_shared<const grammar::TokenTrie>(v, std::vector<int32_t>{0});
  }();
  return trie;
}

void run_grammar(const std::string& gbnf, const std::string& text) {
  std::shared_ptr<const grammar::Grammar> g;
  try {
    g = std::make_shared<const grammar::Grammar>(grammar::parse_gbnf(gbnf));
  } catch (const Error&) {
    return;
  }
  grammar::Matcher m(g);
  for (char c : text) {
    if (!m.accept(std::string(1, c))) break;
    if (m.pool_size() > 200000) return;  // pathological but legal grammars: stop, not a bug
  }
  grammar::TokenConstraint tc(g, small_vocab());
  for (int step = 0; step < 4; ++step) {
    const auto& mask = tc.allowed_mask();
    int32_t pick = -1;
    for (int32_t id = 0; id < (int32_t)small_vocab()->n_vocab(); ++id) {
      const bool in_mask = mask[(size_t)id >> 6] >> (id & 63) & 1;
      if (in_mask != tc.allows(id)) __builtin_trap();  // the two ways of asking disagree
      if (in_mask && id != 0 && pick < 0) pick = id;
    }
    if (pick < 0) break;
    tc.accept(pick);
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string in((const char*)data, size);
  const size_t cut = in.find('\0');
  const std::string head = in.substr(0, cut);
  const std::string tail = cut == std::string::npos ? "" : in.substr(cut + 1);
  run_grammar(head, tail);
  const auto schema = nlohmann::ordered_json::parse(head, nullptr, false);
  if (!schema.is_discarded()) {
    try {
      run_grammar(grammar::json_schema_to_gbnf(schema), tail);
    } catch (const Error&) {
    }
  }
  return 0;
}
