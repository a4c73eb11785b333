#include "server/prefix_sharing.h"

namespace oscar::server {

namespace {
size_t reusable_from(const SlotView& s, std::span<const int32_t> prompt) {
  return s.cached ? reusable_prefix(*s.cached, prompt) : 0;
}
}  // namespace

Placement place_prompt(const std::vector<SlotView>& slots, std::span<const int32_t> prompt, bool share) {
  Placement p;
  p.slot = choose_slot(slots, prompt);
  if (p.slot < 0) return p;
  p.keep = reusable_from(slots[(size_t)p.slot], prompt);
  if (!share) return p;
  // The longest prefix held anywhere else; ties go to the most recent slot
  // (its pages are the least likely to be dropped soon).
  int donor = -1;
  size_t best = p.keep;
  for (size_t i = 0; i < slots.size(); ++i) {
    if ((int)i == p.slot) continue;
    const size_t n = reusable_from(slots[i], prompt);
    if (n > best || (donor >= 0 && n == best && slots[i].last_used > slots[(size_t)donor].last_used)) {
      donor = (int)i;
      best = n;
    }
  }
  if (donor >= 0) return {p.slot, 0, donor, best};
  // In-place reuse would cut the chosen slot's conversation back to the
  // common prefix: an empty free slot shares that prefix instead.
  const SlotView& chosen = slots[(size_t)p.slot];
  if (p.keep == 0 || !chosen.cached || chosen.cached->size() <= p.keep) return p;
  for (size_t i = 0; i < slots.size(); ++i)
    if ((int)i != p.slot && slots[i].free && (!slots[i].cached || slots[i].cached->empty()))
      return {(int)i, 0, p.slot, p.keep};
  return p;
}

}  // namespace oscar::server
