#include "sampling/top_k.h"

#include <algorithm>
#include <cmath>

namespace oscar::sampling {

namespace {
// The sampler's order: a before b. NaN sorts after every number.
bool better(const Candidate& a, const Candidate& b) {
  const bool an = std::isnan(a.logit), bn = std::isnan(b.logit);
  if (an != bn) return bn;
  return a.logit > b.logit || (!(a.logit < b.logit) && a.id < b.id);
}
}  // namespace

void select_top_k(const float* logits, int n, int k, std::vector<Candidate>& out) {
  out.clear();
  if (n <= 0 || k <= 0) return;
  k = std::min(k, n);
  out.reserve((size_t)k);
  for (int i = 0; i < k; ++i) out.push_back({i, logits[i], 0.0f});
  // A heap whose front is the worst kept candidate.
  std::make_heap(out.begin(), out.end(), better);
  float worst = out.front().logit;
  bool worst_nan = std::isnan(worst);
  auto offer = [&](int i) {
    const float x = logits[i];
    // Ids only grow, so a tie with the worst kept loses: strictly better
    // logits enter (and any number beats a NaN).
    if (!(x > worst) && !(worst_nan && !std::isnan(x))) return;
    std::pop_heap(out.begin(), out.end(), better);
    out.back() = {i, x, 0.0f};
    std::push_heap(out.begin(), out.end(), better);
    worst = out.front().logit;
    worst_nan = std::isnan(worst);
  };
  // Almost every block of a long row has nothing better than the worst
  // kept: one branch-free test per block (which the compiler vectorizes)
  // skips it; only blocks with a contender are offered token by token.
  constexpr int kBlock = 32;
  int i = k;
  for (; i + kBlock <= n; i += kBlock) {
    bool contender = worst_nan;
    for (int j = 0; j < kBlock; ++j) contender |= logits[i + j] > worst;
    if (!contender) continue;
    for (int j = 0; j < kBlock; ++j) offer(i + j);
  }
  for (; i < n; ++i) offer(i);
  std::sort_heap(out.begin(), out.end(), better);
}

}  // namespace oscar::sampling
