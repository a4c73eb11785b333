// Token sampling with llama.cpp's default chain and settings:
//   logit bias -> penalties -> top-k -> typical-p -> top-p -> min-p ->
//   temperature -> draw (or greedy when temperature <= 0).
// Deterministic: identical seed, settings and logits give identical tokens.
#pragma once

#include <cstdint>
#include <deque>
#include <random>
#include <utility>
#include <vector>

namespace oscar::sampling {

struct SamplerSettings {
  float temperature = 0.8f;  // <= 0: greedy
  int top_k = 40;            // <= 0: off
  float top_p = 0.95f;       // >= 1: off
  float min_p = 0.05f;       // <= 0: off
  float typical_p = 1.0f;    // >= 1: off
  float repeat_penalty = 1.0f;   // 1: off
  float frequency_penalty = 0.0f;
  float presence_penalty = 0.0f;
  int penalty_last_n = 64;   // window of recent tokens the penalties see; -1: whole history
  std::vector<std::pair<int32_t, float>> logit_bias;  // added to the logit; -inf bans
  uint64_t seed = 0xFFFFFFFF;  // llama.cpp's "random" default is resolved by the caller
};

struct Candidate {
  int32_t id;
  float logit;
  float p;
};

class Sampler {
 public:
  explicit Sampler(const SamplerSettings& s);

  // Picks the next token from a row of n_vocab logits.
  int32_t sample(const float* logits, int n_vocab);
  // Records a token as part of the history the penalties look at (prompt
  // tokens and generated ones alike).
  void accept(int32_t token);
  void reset();  // forget history, re-seed

  // The candidates (id, logit, probability) left after the last sample(),
  // sorted by probability; used for logprobs.
  const std::vector<Candidate>& last_candidates() const { return cand_; }

 private:
  void apply_penalties();
  SamplerSettings s_;
  std::mt19937_64 rng_;
  std::deque<int32_t> history_;
  std::vector<Candidate> cand_;
};

// Softmax probabilities of candidates in place (sorted descending by logit).
void softmax_sorted(std::vector<Candidate>& c);

}  // namespace oscar::sampling
