// Token sampling with llama.cpp's default chain and settings:
//   logit bias -> penalties -> top-k -> typical-p -> top-p -> min-p ->
//   temperature -> draw (or greedy when temperature <= 0).
// Deterministic: identical seed, settings and logits give identical tokens.
//
// With a grammar, tokens the grammar rejects are removed first (before the
// bias, penalties and truncations see them), and the grammar advances with
// each token accept()ed after a sample(). When the grammar is complete only
// end-of-generation tokens remain, so generation ends there.
#pragma once

#include <cstdint>
#include <deque>
#include <memory>
#include <random>
#include <utility>
#include <vector>

#include "grammar/grammar.h"
#include "grammar/token_constraint.h"
#include "grammar/token_trie.h"
#include "sampling/top_k.h"

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
  // Output must match this grammar (GBNF or JSON Schema, compiled); null: free.
  std::shared_ptr<const grammar::Grammar> grammar;
};

class Sampler {
 public:
  // `vocab` (the model's token bytes) is required when s.grammar is set;
  // `masks` shares the grammar's token masks with other generations (null:
  // this sampler's own).
  explicit Sampler(const SamplerSettings& s, std::shared_ptr<const grammar::TokenTrie> vocab = nullptr,
                   std::shared_ptr<grammar::MaskCache> masks = nullptr);

  // Picks the next token from a row of n_vocab logits. Under a grammar that
  // allows no token at all, returns an end-of-generation token.
  int32_t sample(const float* logits, int n_vocab);
  // Records a token as part of the history the penalties look at (prompt
  // tokens and generated ones alike). Tokens accepted after the first
  // sample() are the output and also advance the grammar.
  void accept(int32_t token);
  void reset();  // forget history, re-seed, restart the grammar

  // The grammar has matched a complete sentence (true when there is none).
  bool grammar_complete() const { return !constraint_ || constraint_->complete(); }

  // The candidates (id, logit, probability) left after the last sample(),
  // sorted by probability; used for logprobs.
  const std::vector<Candidate>& last_candidates() const { return cand_; }

 private:
  // The chain after top-k (typical-p, top-p, min-p, temperature, draw) on cand_.
  int32_t sample_truncated();
  // The logits with the logit bias and then the penalties applied (a copy),
  // or the row itself when neither applies.
  const float* adjusted_row(const float* logits, int n_vocab);
  // cand_ = the candidates of `row` the grammar allows (only the best ones
  // when the chain keeps a fixed number); false when none is.
  bool restrict_to_grammar(const float* row, int n_vocab);
  SamplerSettings s_;
  std::shared_ptr<const grammar::TokenTrie> vocab_;
  std::shared_ptr<grammar::MaskCache> masks_;
  std::unique_ptr<grammar::TokenConstraint> constraint_;
  bool sampled_ = false;
  std::vector<float> adjusted_;      // the row with bias and penalties (adjusted_row)
  std::vector<Candidate> probe_;     // the best tokens checked against the grammar first
  std::mt19937_64 rng_;
  std::deque<int32_t> history_;
  std::vector<Candidate> cand_;
};

// Softmax probabilities of candidates in place (sorted descending by logit).
void softmax_sorted(std::vector<Candidate>& c);

}  // namespace oscar::sampling
