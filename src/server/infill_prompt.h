// The prompt of POST /infill (fill-in-the-middle), laid out and cut the way
// llama-server does it (the repo-level FIM pattern of Qwen2.5-Coder):
//   [extra context] [BOS] FIM_PRE prefix prompt FIM_SUF suffix FIM_MID
// where the extra context is FIM_REP "myproject\n", then per input_extra
// chunk FIM_SEP filename "\n" text (a "--- snippet ---" line when the model
// has no FIM_SEP), then FIM_SEP "filename\n". Cuts, for a logical batch
// n_batch: the prefix keeps its last 3/4 * n_batch tokens, the suffix its
// first n_batch/4 - 2 - |prompt|, and the extra context its last
// n_ctx - n_batch - 2 * n_predict tokens. With spm the suffix part comes
// first (FIM_SUF suffix FIM_PRE prefix prompt FIM_MID).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "server/request_parse.h"
#include "tokenizer/tokenizer.h"

namespace oscar::server {

struct InfillInput {
  std::vector<int32_t> prefix, suffix;  // input_prefix / input_suffix (text or token ids)
  struct Chunk {
    std::string filename;
    std::string text;
  };
  std::vector<Chunk> extra;             // input_extra
  std::string prompt;                   // text after the prefix, inside the middle
};

struct InfillLimits {
  int n_batch = 2048;   // the server's logical batch (-b)
  int n_predict = -1;   // the server's default n_predict (-n)
  int n_ctx = 0;        // positions per slot
  bool spm = false;     // suffix-prefix-middle order
};

// Checks and tokenizes the request's infill fields (400s name the field).
InfillInput parse_infill_input(const Json& body, const tok::Tokenizer& tokenizer);

// Throws ApiError(400) when the vocabulary lacks the prefix, suffix or middle token.
void check_fim_support(const tok::Vocab& vocab);

std::vector<int32_t> assemble_infill_prompt(const tok::Tokenizer& tokenizer, const InfillInput& in,
                                            const InfillLimits& lim);

}  // namespace oscar::server
