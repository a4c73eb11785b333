// A grammar applied to a vocabulary: which tokens may come next, and the
// state after the one that was chosen. One per constrained generation.
//
// Two ways to ask, for speed: allows(id) walks one token's bytes (cheap, for
// checking the few most likely tokens first), allowed_mask() walks the whole
// vocabulary trie once. Masks are remembered per matcher state (a JSON
// string's body, for instance, is the same state at every character), so a
// repeated state costs a lookup.
#pragma once

#include <cstdint>
#include <list>
#include <memory>
#include <string>
#include <unordered_map>
#include <vector>

#include "grammar/grammar.h"
#include "grammar/matcher.h"
#include "grammar/token_trie.h"

namespace oscar::grammar {

class TokenConstraint {
 public:
  TokenConstraint(std::shared_ptr<const Grammar> g, std::shared_ptr<const TokenTrie> vocab);

  // Whether the token may come next: its bytes keep the output inside the
  // grammar (end-of-generation tokens: the grammar is complete).
  bool allows(int32_t id);
  // Bit i set when token i is allowed (n_vocab bits).
  const std::vector<uint64_t>& allowed_mask();
  // The mask computed afresh (no cache), into `mask` (n_vocab bits).
  void compute_mask(std::vector<uint64_t>& mask);
  // Advances with a chosen token; throws Error when it is not allowed.
  void accept(int32_t id);

  bool complete() const { return matcher_.complete(); }
  const TokenTrie& vocab() const { return *vocab_; }
  const Matcher& matcher() const { return matcher_; }

 private:
  std::shared_ptr<const TokenTrie> vocab_;
  Matcher matcher_;
  std::vector<MatchState> depth_;  // walk buffers, one per trie depth

  // Masks by matcher state, least recently used evicted.
  static constexpr size_t kMaxMasks = 64;
  std::list<std::pair<std::string, std::vector<uint64_t>>> lru_;
  std::unordered_map<std::string, decltype(lru_)::iterator> masks_;

  std::string state_key() const;
  void walk(uint32_t node, size_t depth, std::vector<uint64_t>& mask);
};

}  // namespace oscar::grammar
