#include "grammar/token_constraint.h"


namespace oscar::grammar {

TokenConstraint::TokenConstraint(std::shared_ptr<const Grammar> g, std::shared_ptr<const TokenTrie> vocab,
                                 std::shared_ptr<MaskCache> masks)
    : vocab_(std::move(vocab)), matcher_(std::move(g)), masks_(std::move(masks)) {
  require(vocab_ != nullptr, "grammar constraint needs a vocabulary");
  if (!masks_) masks_ = std::make_shared<MaskCache>();
}

bool TokenConstraint::allows(int32_t id) {
  if (id < 0 || (size_t)id >= vocab_->n_vocab()) return false;
  if (vocab_->is_eog(id)) return matcher_.complete();
  const std::string& b = vocab_->bytes(id);
  return !b.empty() && matcher_.accepts(b);
}

void TokenConstraint::accept(int32_t id) {
  if (!allows(id) || (!vocab_->is_eog(id) && !matcher_.accept(vocab_->bytes(id))))
    throw Error("token " + std::to_string(id) + " is not allowed by the grammar here");
}

// Depth-first over the trie; depth_[d] is the state after the d bytes on the
// path to `node`. A child whose byte the grammar rejects is skipped with its
// whole subtree.
void TokenConstraint::walk(uint32_t node, size_t depth, std::vector<uint64_t>& mask) {
  const auto& nodes = vocab_->nodes();
  const auto& ids = vocab_->ids();
  if (depth_.size() < depth + 2) depth_.resize(depth + 2);
  const uint32_t end = nodes[node].end;
  for (uint32_t c = node + 1; c < end; c = nodes[c].end) {
    if (!matcher_.step(depth_[depth], nodes[c].byte, depth_[depth + 1])) continue;
    for (uint32_t k = 0; k < nodes[c].tok_count; ++k) {
      const int32_t id = ids[nodes[c].tok_begin + k];
      mask[(size_t)id >> 6] |= 1ull << (id & 63);
    }
    if (nodes[c].end > c + 1) walk(c, depth + 1, mask);
  }
}

void TokenConstraint::compute_mask(std::vector<uint64_t>& mask) {
  mask.assign((vocab_->n_vocab() + 63) / 64, 0);
  if (depth_.empty()) depth_.resize(1);
  depth_[0] = matcher_.state();
  walk(0, 0, mask);
  if (matcher_.complete())
    for (int32_t id : vocab_->eog()) mask[(size_t)id >> 6] |= 1ull << (id & 63);
}

const std::vector<uint64_t>& TokenConstraint::allowed_mask() {
  const std::string key = matcher_.state_key();
  current_ = masks_->find(key);
  if (!current_) {
    auto mask = std::make_shared<TokenMask>();
    compute_mask(*mask);
    current_ = mask;
    masks_->put(key, current_);
  }
  return *current_;
}

}  // namespace oscar::grammar
