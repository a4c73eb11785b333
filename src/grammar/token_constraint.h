// A grammar applied to a vocabulary: which tokens may come next, and the
// state after the one that was chosen. One per constrained generation.
//
// Two ways to ask, for speed: allows(id) walks one token's bytes (cheap, for
// checking the few most likely tokens first), allowed_mask() walks the whole
// vocabulary trie once. Masks are remembered per matcher state (a JSON
// string's body, for instance, is the same state at every character), so a
// repeated state costs a lookup; with a shared MaskCache, also across
// generations under the same grammar.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "grammar/grammar.h"
#include "grammar/mask_cache.h"
#include "grammar/matcher.h"
#include "grammar/token_trie.h"

namespace oscar::grammar {

class TokenConstraint {
 public:
  // `masks`: the cache shared with other generations under the same grammar
  // and vocabulary; null gives this constraint a cache of its own.
  TokenConstraint(std::shared_ptr<const Grammar> g, std::shared_ptr<const TokenTrie> vocab,
                  std::shared_ptr<MaskCache> masks = nullptr);

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

  std::shared_ptr<MaskCache> masks_;
  std::shared_ptr<const TokenMask> current_;  // the last allowed_mask(), kept alive for its caller

  void walk(uint32_t node, size_t depth, std::vector<uint64_t>& mask);
};

}  // namespace oscar::grammar
