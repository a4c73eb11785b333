// Runs a Grammar over bytes: a set of pushdown stacks (one per way the input
// so far can be parsed) advanced one code point at a time, with a UTF-8
// decoder in front so input may stop in the middle of a code point (a token
// may end inside a multi-byte character and the next one finish it).
//
// Stacks are hash-consed in a pool: a stack is (top position, rest), and two
// stacks with the same content have the same id. So a matcher state is a
// small sorted vector of ids, comparing states is comparing vectors, and the
// stacks one character can lead to from a given stack are computed once and
// remembered (they do not depend on which character matched).
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "grammar/grammar.h"

namespace oscar::grammar {

struct MatchState {
  std::vector<uint32_t> stacks;  // sorted ids; 0 is the empty stack (input may end here)
  uint32_t partial = 0;          // bits of a code point whose UTF-8 is not finished
  uint8_t partial_left = 0;      // continuation bytes still expected
  uint8_t partial_len = 0;       // total length of that sequence

  bool operator==(const MatchState& o) const {
    return stacks == o.stacks && partial == o.partial && partial_left == o.partial_left &&
           partial_len == o.partial_len;
  }
};

class Matcher {
 public:
  explicit Matcher(std::shared_ptr<const Grammar> g);

  const MatchState& state() const { return state_; }
  const Grammar& grammar() const { return *g_; }

  // Advances over bytes; returns false and leaves the state unchanged when
  // the grammar rejects them.
  bool accept(std::string_view bytes);
  // Whether accept(bytes) would succeed.
  bool accepts(std::string_view bytes);
  // The input so far is a complete sentence of the grammar.
  bool complete() const { return is_complete(state_); }
  bool is_complete(const MatchState& s) const {
    return s.partial_left == 0 && !s.stacks.empty() && s.stacks[0] == 0;
  }
  // Some continuation (more input) is possible.
  bool can_continue() const { return !state_.stacks.empty() && state_.stacks.back() != 0; }

  // One byte from `in` into `out` (out's buffers are reused). False when no
  // stack can take the byte (or the code point it starts).
  bool step(const MatchState& in, uint8_t byte, MatchState& out);

  size_t pool_size() const { return nodes_.size(); }

  // The current state written out by content (every stack as its positions
  // from top to bottom, the stacks in a canonical order, then the partial
  // code point). Stack ids belong to one matcher's pool; this key means the
  // same state in any matcher of the same grammar, so masks can be shared.
  std::string state_key() const;

 private:
  struct Node {
    uint32_t pos;     // index into Grammar::elems of the element to match next
    uint32_t parent;  // the rest of the stack
  };
  std::shared_ptr<const Grammar> g_;
  std::vector<Node> nodes_;                        // nodes_[0] is the empty stack
  std::unordered_map<uint64_t, uint32_t> index_;   // (pos, parent) -> id
  std::vector<std::vector<uint32_t>> succ_;        // memo: stacks after the top char matched
  std::vector<uint8_t> succ_done_;
  std::vector<uint32_t> seen_;  // expansion epoch that last reached each stack
  uint32_t epoch_ = 0;
  MatchState state_;
  MatchState scratch_[2];

  uint32_t intern(uint32_t pos, uint32_t parent);
  // The stack "continue at pos, then parent", with an exhausted alternative
  // popped so equal stacks get equal ids.
  uint32_t push(uint32_t pos, uint32_t parent);
  // Appends the stacks s stands for (each with a character element on top,
  // or the empty stack); out is left unsorted.
  void expand_all(uint32_t s, std::vector<uint32_t>& out);
  void expand(uint32_t s, std::vector<uint32_t>& out);
  const std::vector<uint32_t>& successors(uint32_t s);
  void advance_cp(const std::vector<uint32_t>& in, uint32_t cp, std::vector<uint32_t>& out);
  bool viable_partial(const MatchState& s) const;
};

}  // namespace oscar::grammar
