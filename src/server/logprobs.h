// Log-probabilities of sampled tokens under the model's full distribution
// (log-softmax of the raw logits), as OpenAI's logprobs report them.
#pragma once

#include <cstdint>
#include <utility>
#include <vector>

namespace oscar::server {

// log p(token) and the `top_n` most likely tokens with their log p
// (descending; ties by smaller id).
struct LogProbs {
  float token_logprob = 0;
  std::vector<std::pair<int32_t, float>> top;
};
LogProbs compute_logprobs(const float* logits, int n_vocab, int32_t token, int top_n);

}  // namespace oscar::server
