#include "sampling/sampler.h"

#include <algorithm>
#include <cmath>
#include <unordered_map>

namespace oscar::sampling {

void softmax_sorted(std::vector<Candidate>& c) {
  std::sort(c.begin(), c.end(), [](const Candidate& a, const Candidate& b) {
    return a.logit > b.logit || (a.logit == b.logit && a.id < b.id);
  });
  if (c.empty()) return;
  const float mx = c[0].logit;
  double sum = 0;
  for (auto& x : c) {
    x.p = std::isinf(x.logit) && x.logit < 0 ? 0.0f : (float)std::exp((double)x.logit - mx);
    sum += x.p;
  }
  for (auto& x : c) x.p = (float)(x.p / sum);
}

Sampler::Sampler(const SamplerSettings& s, std::shared_ptr<const grammar::TokenTrie> vocab,
                 std::shared_ptr<grammar::MaskCache> masks)
    : s_(s), vocab_(std::move(vocab)), rng_(s.seed) {
  if (s_.grammar) {
    require(vocab_ != nullptr, "a grammar-constrained sampler needs the model's vocabulary");
    masks_ = masks ? std::move(masks) : std::make_shared<grammar::MaskCache>();
    constraint_ = std::make_unique<grammar::TokenConstraint>(s_.grammar, vocab_, masks_);
  }
}

void Sampler::reset() {
  history_.clear();
  rng_.seed(s_.seed);
  sampled_ = false;
  if (s_.grammar) constraint_ = std::make_unique<grammar::TokenConstraint>(s_.grammar, vocab_, masks_);
}

void Sampler::accept(int32_t token) {
  // A token the grammar does not allow can only be the end-of-generation
  // fallback of sample(); generation stops there, so it is not an error.
  if (constraint_ && sampled_ && constraint_->allows(token)) constraint_->accept(token);
  history_.push_back(token);
  const size_t keep = s_.penalty_last_n < 0 ? SIZE_MAX : (size_t)std::max(s_.penalty_last_n, 0);
  while (history_.size() > keep) history_.pop_front();
}

namespace {
bool by_logit(const Candidate& a, const Candidate& b) {
  return a.logit > b.logit || (a.logit == b.logit && a.id < b.id);
}
}  // namespace

bool Sampler::restrict_to_grammar(const float* row, int n_vocab) {
  // The chain after the grammar keeps at most `want` tokens (top-k, or one
  // when greedy), the best allowed ones. Checking candidates best-first one
  // token at a time usually finds them among the first few, which is much
  // cheaper than the whole-vocabulary mask and gives the same result.
  const size_t want = s_.temperature <= 0.0f ? 1 : (s_.top_k > 0 ? (size_t)s_.top_k : 0);
  if (want > 0) {
    const int probe = std::min(n_vocab, (int)std::max<size_t>(64, want * 4));
    select_top_k(row, n_vocab, probe, probe_);
    cand_.clear();
    for (size_t i = 0; i < probe_.size() && cand_.size() < want; ++i)
      if (!std::isinf(probe_[i].logit) && constraint_->allows(probe_[i].id)) cand_.push_back(probe_[i]);
    if (cand_.size() == want) return true;
  }
  const std::vector<uint64_t>& mask = constraint_->allowed_mask();
  // Rows may be padded beyond the tokenizer's vocabulary: those ids have no
  // text and are never allowed.
  const size_t n_known = std::min(constraint_->vocab().n_vocab(), (size_t)n_vocab);
  cand_.clear();
  for (size_t id = 0; id < n_known; ++id)
    if ((mask[id >> 6] >> (id & 63) & 1) && !(std::isinf(row[id]) && row[id] < 0))
      cand_.push_back({(int32_t)id, row[id], 0.0f});
  return !cand_.empty();
}

const float* Sampler::adjusted_row(const float* logits, int n_vocab) {
  const bool penalties = (s_.repeat_penalty != 1.0f || s_.frequency_penalty != 0.0f || s_.presence_penalty != 0.0f) &&
                         !history_.empty();
  if (s_.logit_bias.empty() && !penalties) return logits;
  adjusted_.assign(logits, logits + n_vocab);
  for (const auto& [id, bias] : s_.logit_bias)
    if (id >= 0 && id < n_vocab) adjusted_[(size_t)id] += bias;
  if (!penalties) return adjusted_.data();
  std::unordered_map<int32_t, int> count;
  for (int32_t t : history_) count[t]++;
  for (const auto& [id, n] : count) {
    if (id < 0 || id >= n_vocab) continue;
    // Repetition penalty as in llama.cpp / CTRL: shrink positive logits,
    // push negative ones further down.
    float& x = adjusted_[(size_t)id];
    if (x <= 0) x *= s_.repeat_penalty;
    else x /= s_.repeat_penalty;
    x -= (float)n * s_.frequency_penalty + s_.presence_penalty;
  }
  return adjusted_.data();
}

int32_t Sampler::sample(const float* logits, int n_vocab) {
  const float* row = adjusted_row(logits, n_vocab);
  if (constraint_) {
    sampled_ = true;
    if (!restrict_to_grammar(row, n_vocab)) {
      // Nothing can continue the output (a grammar the vocabulary cannot
      // spell): end the generation rather than break the grammar.
      const auto& eog = constraint_->vocab().eog();
      cand_.clear();
      return eog.empty() ? 0 : eog[0];
    }
  } else if (s_.temperature > 0.0f && s_.top_k > 0 && s_.top_k < n_vocab) {
    // The common chain needs only the k best tokens: one pass over the row
    // (sampling/top_k.h) gives exactly the candidates a sort would keep.
    select_top_k(row, n_vocab, s_.top_k, cand_);
    return sample_truncated();
  } else {
    cand_.resize((size_t)n_vocab);
    for (int i = 0; i < n_vocab; ++i) cand_[(size_t)i] = {i, row[i], 0.0f};
  }

  if (s_.temperature <= 0.0f) {
    softmax_sorted(cand_);
    return cand_[0].id;
  }
  if (s_.top_k > 0 && (size_t)s_.top_k < cand_.size()) {
    std::partial_sort(cand_.begin(), cand_.begin() + s_.top_k, cand_.end(), by_logit);
    cand_.resize((size_t)s_.top_k);
  }
  return sample_truncated();
}

int32_t Sampler::sample_truncated() {
  softmax_sorted(cand_);
  if (s_.typical_p < 1.0f) {
    // Locally typical sampling: keep the tokens whose surprise is closest to
    // the entropy until their mass reaches typical_p.
    double ent = 0;
    for (const auto& c : cand_)
      if (c.p > 0) ent -= c.p * std::log(c.p);
    std::vector<std::pair<double, size_t>> dev;
    for (size_t i = 0; i < cand_.size(); ++i)
      dev.emplace_back(std::fabs(-std::log(std::max(cand_[i].p, 1e-30f)) - ent), i);
    std::stable_sort(dev.begin(), dev.end());
    double mass = 0;
    std::vector<Candidate> kept;
    for (const auto& [d, i] : dev) {
      kept.push_back(cand_[i]);
      mass += cand_[i].p;
      if (mass >= s_.typical_p) break;
    }
    cand_ = std::move(kept);
    softmax_sorted(cand_);
  }
  if (s_.top_p < 1.0f) {
    double mass = 0;
    size_t keep = cand_.size();
    for (size_t i = 0; i < cand_.size(); ++i) {
      mass += cand_[i].p;
      if (mass >= s_.top_p) {
        keep = i + 1;
        break;
      }
    }
    cand_.resize(std::max<size_t>(keep, 1));
  }
  if (s_.min_p > 0.0f && !cand_.empty()) {
    const float floor_p = cand_[0].p * s_.min_p;
    size_t keep = 1;
    while (keep < cand_.size() && cand_[keep].p >= floor_p) ++keep;
    cand_.resize(keep);
  }
  for (auto& c : cand_) c.logit /= s_.temperature;
  softmax_sorted(cand_);
  // Inverse-CDF draw with our own uniform so results do not depend on the
  // standard library's distribution implementation.
  const double u = (double)(rng_() >> 11) * (1.0 / 9007199254740992.0);
  double acc = 0;
  for (const auto& c : cand_) {
    acc += c.p;
    if (u < acc) return c.id;
  }
  return cand_.back().id;
}

}  // namespace oscar::sampling
