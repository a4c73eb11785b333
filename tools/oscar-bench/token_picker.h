// How a tg test chooses each next token. llama-bench feeds random token ids
// and never samples; `--sample` adds the cost a server pays per token:
//   off      random ids, no sampling (llama-bench's way; the default)
//   free     the sampler chain (top-k 40, top-p 0.95, min-p 0.05, temp 0.8)
//   FILE     the same chain under a grammar: FILE.json is a JSON Schema,
//            anything else GBNF. When the grammar completes (or only an
//            end-of-generation token fits) it starts again, so a long run
//            keeps writing fresh documents.
#pragma once

#include <cstdint>
#include <memory>
#include <random>
#include <string>

#include "grammar/grammar.h"
#include "grammar/token_trie.h"
#include "sampling/sampler.h"
#include "tokenizer/tokenizer.h"

namespace oscar::bench {

// The grammar a --sample item names (null for off and free). Throws Error
// naming the file when it cannot be read or compiled.
std::shared_ptr<const grammar::Grammar> grammar_of_sample_mode(const std::string& mode);

class TokenPicker {
 public:
  TokenPicker(const std::string& mode, const tok::Tokenizer& tok, int n_vocab, unsigned seed);

  // The token after a step whose logits are `logits` (n_vocab floats; unused
  // when mode is off).
  int32_t next(const float* logits);
  bool samples() const { return sampler_ != nullptr; }
  int documents_completed() const { return completed_; }  // grammar restarts

 private:
  int n_vocab_;
  std::mt19937 rng_;
  std::uniform_int_distribution<int32_t> random_id_;
  std::shared_ptr<const grammar::TokenTrie> vocab_;
  std::unique_ptr<sampling::Sampler> sampler_;
  bool constrained_ = false;
  int completed_ = 0;
};

}  // namespace oscar::bench
