#include "grammar/grammar_cache.h"

namespace oscar::grammar {

std::shared_ptr<const Grammar> GrammarCache::get(const std::string& key, const std::function<std::string()>& make_gbnf) {
  {
    std::lock_guard<std::mutex> l(m_);
    auto it = index_.find(key);
    if (it != index_.end()) {
      lru_.splice(lru_.begin(), lru_, it->second);
      return it->second->second;
    }
  }
  // Compile outside the lock: a slow schema does not hold up other requests.
  auto g = std::make_shared<const Grammar>(parse_gbnf(make_gbnf()));
  std::lock_guard<std::mutex> l(m_);
  if (index_.count(key)) return index_[key]->second;
  lru_.emplace_front(key, g);
  index_[key] = lru_.begin();
  while (lru_.size() > capacity_) {
    index_.erase(lru_.back().first);
    lru_.pop_back();
  }
  return g;
}

size_t GrammarCache::size() const {
  std::lock_guard<std::mutex> l(m_);
  return lru_.size();
}

}  // namespace oscar::grammar
