#include "grammar/matcher.h"

#include <algorithm>

namespace oscar::grammar {

namespace {
void sort_unique(std::vector<uint32_t>& v) {
  std::sort(v.begin(), v.end());
  v.erase(std::unique(v.begin(), v.end()), v.end());
}
}  // namespace

Matcher::Matcher(std::shared_ptr<const Grammar> g) : g_(std::move(g)) {
  require(g_ != nullptr, "grammar matcher needs a grammar");
  nodes_.push_back({0, 0});
  seen_.push_back(0);
  succ_.emplace_back();
  succ_done_.push_back(1);
  for (uint32_t alt : g_->rule_alts[g_->root]) expand_all(push(alt, 0), state_.stacks);
  sort_unique(state_.stacks);
}

uint32_t Matcher::intern(uint32_t pos, uint32_t parent) {
  const uint64_t key = ((uint64_t)pos << 32) | parent;
  auto [it, inserted] = index_.emplace(key, (uint32_t)nodes_.size());
  if (inserted) {
    nodes_.push_back({pos, parent});
    succ_.emplace_back();
    succ_done_.push_back(0);
    seen_.push_back(0);
  }
  return it->second;
}

uint32_t Matcher::push(uint32_t pos, uint32_t parent) {
  return g_->elems[pos].kind == ElemKind::End ? parent : intern(pos, parent);
}

// Replaces a stack by the stacks whose top is a character element (or the
// empty stack), trying every alternative of a rule on top. No left
// recursion (the parser rejects it) and a stack reached twice is expanded
// once, so this terminates.
void Matcher::expand_all(uint32_t s, std::vector<uint32_t>& out) {
  epoch_++;
  expand(s, out);
}

void Matcher::expand(uint32_t s, std::vector<uint32_t>& out) {
  if (seen_[s] == epoch_) return;
  seen_[s] = epoch_;
  if (s == 0) {
    out.push_back(0);
    return;
  }
  const Node n = nodes_[s];
  const Element e = g_->elems[n.pos];
  if (e.kind == ElemKind::Char) {
    out.push_back(s);
    return;
  }
  // e is a rule (End never sits on top: push() pops it).
  const uint32_t cont = push(n.pos + 1, n.parent);
  for (uint32_t alt : g_->rule_alts[e.value]) expand(push(alt, cont), out);
}

const std::vector<uint32_t>& Matcher::successors(uint32_t s) {
  if (!succ_done_[s]) {
    std::vector<uint32_t> out;
    const Node n = nodes_[s];
    expand_all(push(n.pos + 1, n.parent), out);
    sort_unique(out);
    succ_[s] = std::move(out);
    succ_done_[s] = 1;
  }
  return succ_[s];
}

void Matcher::advance_cp(const std::vector<uint32_t>& in, uint32_t cp, std::vector<uint32_t>& out) {
  out.clear();
  int matched = 0;
  for (uint32_t s : in) {
    if (s == 0) continue;
    const Element e = g_->elems[nodes_[s].pos];
    if (!g_->classes[e.value].matches(cp)) continue;
    const std::vector<uint32_t>& next = successors(s);
    out.insert(out.end(), next.begin(), next.end());
    matched++;
  }
  // One stack's successors are already sorted and distinct (the common
  // case, e.g. a character inside a string); only a union needs sorting.
  if (matched > 1) sort_unique(out);
}

bool Matcher::viable_partial(const MatchState& s) const {
  // The code points that can still result: the known high bits followed by
  // any continuation bits.
  const unsigned shift = 6u * s.partial_left;
  static constexpr uint32_t kMin[5] = {0, 0, 0x80, 0x800, 0x10000};
  const uint32_t lo = std::max(s.partial << shift, kMin[s.partial_len]);
  const uint32_t hi = std::min((s.partial << shift) | ((1u << shift) - 1), 0x10FFFFu);
  if (lo > hi) return false;
  for (uint32_t id : s.stacks) {
    if (id == 0) continue;
    const Element e = g_->elems[nodes_[id].pos];
    if (g_->classes[e.value].intersects(lo, hi)) return true;
  }
  return false;
}

bool Matcher::step(const MatchState& in, uint8_t b, MatchState& out) {
  if (in.partial_left == 0) {
    if (b < 0x80) {
      advance_cp(in.stacks, b, out.stacks);
      out.partial = 0, out.partial_left = 0, out.partial_len = 0;
      return !out.stacks.empty();
    }
    int more;
    if ((b & 0xE0) == 0xC0) more = 1, out.partial = b & 0x1F;
    else if ((b & 0xF0) == 0xE0) more = 2, out.partial = b & 0x0F;
    else if ((b & 0xF8) == 0xF0) more = 3, out.partial = b & 0x07;
    else return false;  // stray continuation byte or invalid lead
    out.partial_left = (uint8_t)more;
    out.partial_len = (uint8_t)(more + 1);
    out.stacks = in.stacks;
    return viable_partial(out);
  }
  if ((b & 0xC0) != 0x80) return false;
  const uint32_t v = (in.partial << 6) | (b & 0x3F);
  if (in.partial_left > 1) {
    out.partial = v;
    out.partial_left = (uint8_t)(in.partial_left - 1);
    out.partial_len = in.partial_len;
    out.stacks = in.stacks;
    return viable_partial(out);
  }
  static constexpr uint32_t kMin[5] = {0, 0, 0x80, 0x800, 0x10000};
  if (v < kMin[in.partial_len] || v > 0x10FFFF || (v >= 0xD800 && v <= 0xDFFF)) return false;
  advance_cp(in.stacks, v, out.stacks);
  out.partial = 0, out.partial_left = 0, out.partial_len = 0;
  return !out.stacks.empty();
}

bool Matcher::accepts(std::string_view bytes) {
  const MatchState* cur = &state_;
  int k = 0;
  for (char c : bytes) {
    MatchState& next = scratch_[k];
    if (!step(*cur, (uint8_t)c, next)) return false;
    cur = &next;
    k ^= 1;
  }
  return true;
}

bool Matcher::accept(std::string_view bytes) {
  MatchState cur = state_, next;
  for (char c : bytes) {
    if (!step(cur, (uint8_t)c, next)) return false;
    std::swap(cur, next);
  }
  state_ = std::move(cur);
  return true;
}

std::string Matcher::state_key() const {
  std::vector<std::string> stacks;
  stacks.reserve(state_.stacks.size());
  for (uint32_t id : state_.stacks) {
    std::string one;
    for (uint32_t n = id; n != 0; n = nodes_[n].parent) one.append((const char*)&nodes_[n].pos, 4);
    stacks.push_back(std::move(one));
  }
  std::sort(stacks.begin(), stacks.end());
  std::string key;
  for (const std::string& one : stacks) {
    const uint32_t len = (uint32_t)one.size();
    key.append((const char*)&len, 4);  // lengths keep the stack boundaries unambiguous
    key += one;
  }
  key.append((const char*)&state_.partial, 4);
  key += (char)state_.partial_left;
  key += (char)state_.partial_len;
  return key;
}

}  // namespace oscar::grammar
