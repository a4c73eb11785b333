#include "server/logprobs.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <numeric>

namespace oscar::server {

LogProbs compute_logprobs(const float* logits, int n_vocab, int32_t token, int top_n) {
  LogProbs r;
  if (n_vocab <= 0) return r;
  const float mx = *std::max_element(logits, logits + n_vocab);
  double sum = 0;
  for (int i = 0; i < n_vocab; ++i) sum += std::exp((double)logits[i] - mx);
  const double log_z = mx + std::log(sum);
  if (token >= 0 && token < n_vocab) r.token_logprob = (float)(logits[token] - log_z);
  top_n = std::min(top_n, n_vocab);
  if (top_n > 0) {
    std::vector<int32_t> ids((size_t)n_vocab);
    std::iota(ids.begin(), ids.end(), 0);
    std::partial_sort(ids.begin(), ids.begin() + top_n, ids.end(), [&](int32_t a, int32_t b) {
      return logits[a] > logits[b] || (logits[a] == logits[b] && a < b);
    });
    for (int i = 0; i < top_n; ++i) r.top.emplace_back(ids[(size_t)i], (float)(logits[ids[(size_t)i]] - log_z));
  }
  return r;
}

LogProbs post_sampling_logprobs(const std::vector<sampling::Candidate>& kept, int32_t token, int top_n) {
  LogProbs r;
  r.token_logprob = -std::numeric_limits<float>::infinity();
  std::vector<const sampling::Candidate*> order;
  order.reserve(kept.size());
  for (const auto& c : kept) {
    if (c.id == token) r.token_logprob = c.p > 0 ? std::log(c.p) : r.token_logprob;
    if (c.p > 0) order.push_back(&c);
  }
  top_n = std::min<int>(top_n, (int)order.size());
  std::partial_sort(order.begin(), order.begin() + top_n, order.end(), [](const auto* a, const auto* b) {
    return a->p > b->p || (a->p == b->p && a->id < b->id);
  });
  for (int i = 0; i < top_n; ++i) r.top.emplace_back(order[(size_t)i]->id, std::log(order[(size_t)i]->p));
  return r;
}

}  // namespace oscar::server
