#include "grammar/mask_cache.h"

namespace oscar::grammar {

std::shared_ptr<const TokenMask> MaskCache::find(const std::string& state_key) {
  std::lock_guard<std::mutex> l(m_);
  auto it = index_.find(state_key);
  if (it == index_.end()) {
    ++misses_;
    return nullptr;
  }
  ++hits_;
  lru_.splice(lru_.begin(), lru_, it->second);
  return it->second->second;
}

void MaskCache::put(const std::string& state_key, std::shared_ptr<const TokenMask> mask) {
  std::lock_guard<std::mutex> l(m_);
  auto it = index_.find(state_key);
  if (it != index_.end()) {  // another generation got there first: keep one
    lru_.splice(lru_.begin(), lru_, it->second);
    return;
  }
  lru_.emplace_front(state_key, std::move(mask));
  index_.emplace(state_key, lru_.begin());
  while (lru_.size() > capacity_) {
    index_.erase(lru_.back().first);
    lru_.pop_back();
  }
}

size_t MaskCache::hits() const {
  std::lock_guard<std::mutex> l(m_);
  return hits_;
}
size_t MaskCache::misses() const {
  std::lock_guard<std::mutex> l(m_);
  return misses_;
}
size_t MaskCache::size() const {
  std::lock_guard<std::mutex> l(m_);
  return lru_.size();
}

std::shared_ptr<MaskCache> MaskStore::for_grammar(const std::shared_ptr<const Grammar>& g) {
  std::lock_guard<std::mutex> l(m_);
  auto it = index_.find(g.get());
  if (it != index_.end()) {
    if (it->second->second.grammar.lock() == g) {
      lru_.splice(lru_.begin(), lru_, it->second);
      return it->second->second.masks;
    }
    lru_.erase(it->second);  // a freed grammar's address, reused
    index_.erase(it);
  }
  lru_.emplace_front(g.get(), Entry{g, std::make_shared<MaskCache>()});
  index_[g.get()] = lru_.begin();
  while (lru_.size() > max_grammars_) {
    index_.erase(lru_.back().first);
    lru_.pop_back();
  }
  return lru_.front().second.masks;
}

size_t MaskStore::size() const {
  std::lock_guard<std::mutex> l(m_);
  return lru_.size();
}

}  // namespace oscar::grammar
