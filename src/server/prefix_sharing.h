// Where a new prompt goes when slots may share a prompt prefix through the
// KV pool (docs/kv-pool.md). Without sharing, a prompt goes to the free slot
// whose cache shares the longest prefix with it and keeps that much
// (prefix_reuse.h). With sharing, the prefix may come from any other slot,
// busy or idle: the new slot lists that slot's finished pages and copies its
// per-slot rows instead of evaluating the prefix again.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <vector>

#include "server/prefix_reuse.h"

namespace oscar::server {

struct Placement {
  int slot = -1;      // the slot that takes the prompt (-1: none free)
  size_t keep = 0;    // its own cached positions it keeps (in place)
  int donor = -1;     // >= 0: the slot whose prefix it shares instead (its own cache is dropped)
  size_t shared = 0;  // positions to take from the donor
};

// The slot for `prompt` among `slots` (free: may take it; cached: tokens in
// every slot's cache, busy ones included). With `share` false this is
// choose_slot() and its reusable prefix. With `share` true:
//  - another slot holding a longer reusable prefix than the chosen slot's
//    own becomes the donor;
//  - a free slot whose reuse would cut its own longer conversation short
//    becomes the donor of an empty free slot instead, so that both
//    conversations stay cached (e.g. two chats that share a system prompt).
Placement place_prompt(const std::vector<SlotView>& slots, std::span<const int32_t> prompt, bool share);

}  // namespace oscar::server
