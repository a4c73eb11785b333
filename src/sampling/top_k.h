// The k best tokens of a logits row, in the sampler's order (higher logit
// first, the smaller id on ties), without building and sorting a candidate
// for every token of the vocabulary: one pass over the row keeps a heap of
// the k best so far, and a token only enters it when it beats the heap's
// worst. On a 151K-token vocabulary that is one read of the row instead of
// writing 1.8 MB of candidates and partially sorting them.
#pragma once

#include <cstdint>
#include <vector>

namespace oscar::sampling {

struct Candidate {
  int32_t id;
  float logit;
  float p;
};

// Writes the min(k, n) best of logits[0..n) to `out` (p = 0), best first.
// NaN logits are never selected unless fewer than k others exist.
void select_top_k(const float* logits, int n, int k, std::vector<Candidate>& out);

}  // namespace oscar::sampling
