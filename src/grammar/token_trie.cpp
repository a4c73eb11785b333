#include "grammar/token_trie.h"

#include <algorithm>
#include <numeric>

namespace oscar::grammar {

TokenTrie::TokenTrie(std::vector<std::string> token_bytes, std::vector<int32_t> eog)
    : bytes_(std::move(token_bytes)), eog_(std::move(eog)), is_eog_(bytes_.size(), 0) {
  for (int32_t id : eog_)
    if (id >= 0 && (size_t)id < is_eog_.size()) is_eog_[(size_t)id] = 1;
  for (size_t id = 0; id < bytes_.size(); ++id)
    if (!bytes_[id].empty() && !is_eog_[id]) ids_.push_back((int32_t)id);
  std::stable_sort(ids_.begin(), ids_.end(),
                   [&](int32_t a, int32_t b) { return bytes_[(size_t)a] < bytes_[(size_t)b]; });

  // Sorted strings -> preorder trie: keep the path to the last inserted
  // string; each new string shares its longest common prefix with it.
  nodes_.push_back({0, 0, 0, 0});
  std::vector<uint32_t> path{0};  // path[d]: node at depth d
  const std::string* prev = nullptr;
  for (size_t k = 0; k < ids_.size(); ++k) {
    const std::string& s = bytes_[(size_t)ids_[k]];
    size_t common = 0;
    if (prev) {
      const size_t lim = std::min(prev->size(), s.size());
      while (common < lim && (*prev)[common] == s[common]) common++;
    }
    while (path.size() > common + 1) {
      nodes_[path.back()].end = (uint32_t)nodes_.size();
      path.pop_back();
    }
    for (size_t d = common; d < s.size(); ++d) {
      path.push_back((uint32_t)nodes_.size());
      nodes_.push_back({0, 0, 0, (uint8_t)s[d]});
    }
    Node& leaf = nodes_[path.back()];
    if (leaf.tok_count == 0) leaf.tok_begin = (uint32_t)k;
    leaf.tok_count++;
    prev = &s;
  }
  while (!path.empty()) {
    nodes_[path.back()].end = (uint32_t)nodes_.size();
    path.pop_back();
  }
}

}  // namespace oscar::grammar
