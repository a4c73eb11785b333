// Token masks remembered across generations. A mask depends only on the
// grammar, the vocabulary and the matcher state, so every request under the
// same schema can reuse what an earlier one computed: the whole-vocabulary
// walk inside a JSON string (~10 ms on a 150K vocabulary) is paid once per
// grammar and state, not once per request.
//
// MaskCache: the masks of one (grammar, vocabulary) pair, by state key,
// least recently used dropped beyond its capacity. MaskStore: a MaskCache
// per live grammar, for one vocabulary (a server's model). Both are
// thread-safe; masks are immutable once stored and handed out shared.
#pragma once

#include <cstdint>
#include <list>
#include <memory>
#include <mutex>
#include <string>
#include <unordered_map>
#include <vector>

#include "grammar/grammar.h"

namespace oscar::grammar {

using TokenMask = std::vector<uint64_t>;  // bit i: token i allowed

class MaskCache {
 public:
  explicit MaskCache(size_t capacity = 64) : capacity_(capacity) {}

  std::shared_ptr<const TokenMask> find(const std::string& state_key);
  void put(const std::string& state_key, std::shared_ptr<const TokenMask> mask);

  size_t hits() const;
  size_t misses() const;
  size_t size() const;

 private:
  size_t capacity_;
  mutable std::mutex m_;
  std::list<std::pair<std::string, std::shared_ptr<const TokenMask>>> lru_;
  std::unordered_map<std::string, decltype(lru_)::iterator> index_;
  size_t hits_ = 0, misses_ = 0;
};

class MaskStore {
 public:
  explicit MaskStore(size_t max_grammars = 16) : max_grammars_(max_grammars) {}

  // The cache for this grammar (the same object for as long as the grammar
  // lives and stays among the most recently used max_grammars).
  std::shared_ptr<MaskCache> for_grammar(const std::shared_ptr<const Grammar>& g);

  size_t size() const;

 private:
  struct Entry {
    std::weak_ptr<const Grammar> grammar;  // an address reused by a new grammar is not a match
    std::shared_ptr<MaskCache> masks;
  };
  size_t max_grammars_;
  mutable std::mutex m_;
  std::list<std::pair<const Grammar*, Entry>> lru_;
  std::unordered_map<const Grammar*, decltype(lru_)::iterator> index_;
};

}  // namespace oscar::grammar
