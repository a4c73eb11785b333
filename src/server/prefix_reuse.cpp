#include "server/prefix_reuse.h"

namespace oscar::server {

size_t common_prefix(std::span<const int32_t> a, std::span<const int32_t> b) {
  size_t n = 0;
  while (n < a.size() && n < b.size() && a[n] == b[n]) ++n;
  return n;
}

size_t reusable_prefix(std::span<const int32_t> cached, std::span<const int32_t> prompt) {
  size_t n = common_prefix(cached, prompt);
  if (n > 0 && n == prompt.size()) --n;
  return n;
}

int choose_slot(const std::vector<SlotView>& slots, std::span<const int32_t> prompt) {
  int best = -1;
  size_t best_keep = 0;
  for (size_t i = 0; i < slots.size(); ++i) {
    const SlotView& s = slots[i];
    if (!s.free) continue;
    const size_t keep = s.cached ? reusable_prefix(*s.cached, prompt) : 0;
    if (best < 0 || keep > best_keep || (keep == best_keep && s.last_used < slots[(size_t)best].last_used)) {
      best = (int)i;
      best_keep = keep;
    }
  }
  return best;
}

}  // namespace oscar::server
