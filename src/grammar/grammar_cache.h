// Compiled grammars by source text, shared across requests: a client that
// sends the same schema with every request compiles it once. Thread-safe;
// least recently used entries are dropped beyond the capacity.
#pragma once

#include <functional>
#include <list>
#include <memory>
#include <mutex>
#include <string>
#include <unordered_map>

#include "grammar/grammar.h"

namespace oscar::grammar {

class GrammarCache {
 public:
  explicit GrammarCache(size_t capacity = 64) : capacity_(capacity) {}

  // The grammar cached under `key`, or make_gbnf() parsed and cached.
  // Errors from make_gbnf or the parser propagate and nothing is cached.
  std::shared_ptr<const Grammar> get(const std::string& key, const std::function<std::string()>& make_gbnf);

  size_t size() const;

 private:
  size_t capacity_;
  mutable std::mutex m_;
  std::list<std::pair<std::string, std::shared_ptr<const Grammar>>> lru_;
  std::unordered_map<std::string, decltype(lru_)::iterator> index_;
};

}  // namespace oscar::grammar
