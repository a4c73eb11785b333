// The byte strings of a model's vocabulary arranged as a trie, built once per
// vocabulary and shared (read-only) by every constrained generation. Walking
// it with a matcher state visits each distinct token prefix once, and a
// prefix the grammar rejects prunes every token below it.
//
// Layout: nodes in preorder; a node's children follow it, and `end` is one
// past its subtree, so the next sibling of node i is end(i).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace oscar::grammar {

class TokenTrie {
 public:
  // token_bytes[id]: what the token appends to the output. Tokens with no
  // bytes (control tokens, unused slots) are never allowed by a grammar;
  // `eog` tokens are allowed exactly when the grammar is complete.
  TokenTrie(std::vector<std::string> token_bytes, std::vector<int32_t> eog);

  size_t n_vocab() const { return bytes_.size(); }
  const std::string& bytes(int32_t id) const { return bytes_[(size_t)id]; }
  const std::vector<int32_t>& eog() const { return eog_; }
  bool is_eog(int32_t id) const { return id >= 0 && (size_t)id < is_eog_.size() && is_eog_[(size_t)id]; }
  size_t n_nodes() const { return nodes_.size(); }

  struct Node {
    uint32_t end;        // one past the last node of this subtree
    uint32_t tok_begin;  // this node's tokens: ids_[tok_begin, tok_begin + tok_count)
    uint32_t tok_count;
    uint8_t byte;        // the byte on the edge into this node (root: 0)
  };
  const std::vector<Node>& nodes() const { return nodes_; }
  const std::vector<int32_t>& ids() const { return ids_; }

 private:
  std::vector<std::string> bytes_;
  std::vector<int32_t> eog_;
  std::vector<uint8_t> is_eog_;
  std::vector<Node> nodes_;
  std::vector<int32_t> ids_;  // token ids in byte-string order
};

}  // namespace oscar::grammar
