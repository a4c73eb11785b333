// Which free slot a new prompt goes to, and how much of that slot's cache
// it can keep: the slot whose cached tokens share the longest prefix with
// the prompt wins, so a conversation's next turn lands where its earlier
// turns are still cached.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <vector>

namespace oscar::server {

size_t common_prefix(std::span<const int32_t> a, std::span<const int32_t> b);

// Positions of `cached` a slot can keep for `prompt`: the common prefix,
// less one when it covers the whole prompt (the last prompt token must be
// evaluated again to get its logits).
size_t reusable_prefix(std::span<const int32_t> cached, std::span<const int32_t> prompt);

struct SlotView {
  bool free = false;
  const std::vector<int32_t>* cached = nullptr;  // tokens in the slot's cache
  uint64_t last_used = 0;                        // larger: more recent
};

// The free slot to use (-1: none free): longest reusable prefix, then the
// least recently used (which keeps recent conversations cached longest).
int choose_slot(const std::vector<SlotView>& slots, std::span<const int32_t> prompt);

}  // namespace oscar::server
