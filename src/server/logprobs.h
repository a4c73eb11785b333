// Log-probabilities of sampled tokens under the model's full distribution
// (log-softmax of the raw logits), as OpenAI's logprobs report them.
#pragma once

#include <cstdint>
#include <utility>
#include <vector>

#include "sampling/sampler.h"

namespace oscar::server {

// log p(token) and the `top_n` most likely tokens with their log p
// (descending; ties by smaller id).
struct LogProbs {
  float token_logprob = 0;
  std::vector<std::pair<int32_t, float>> top;
};
LogProbs compute_logprobs(const float* logits, int n_vocab, int32_t token, int top_n);

// The same after the sampling chain (llama-server's post_sampling_probs):
// from the candidates the sampler kept, with the probabilities it drew
// from. Tokens with probability 0 are never listed, so `top` may be
// shorter than `top_n`; a token the chain dropped gets -inf.
LogProbs post_sampling_logprobs(const std::vector<sampling::Candidate>& kept, int32_t token, int top_n);

}  // namespace oscar::server
