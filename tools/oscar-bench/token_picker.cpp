#include "token_picker.h"

#include <fstream>
#include <sstream>

#include "core/error.h"
#include "grammar/grammar_flags.h"
#include "grammar/vocab_bytes.h"

namespace oscar::bench {

namespace {

bool ends_with(const std::string& s, const std::string& tail) {
  return s.size() >= tail.size() && s.compare(s.size() - tail.size(), tail.size(), tail) == 0;
}

}  // namespace

std::shared_ptr<const grammar::Grammar> grammar_of_sample_mode(const std::string& mode) {
  if (mode == "off" || mode == "free") return nullptr;
  std::ifstream in(mode, std::ios::binary);
  if (!in) throw Error("--sample: cannot read '" + mode + "' (expected off, free, or a .json schema / GBNF file)");
  std::stringstream text;
  text << in.rdbuf();
  try {
    return ends_with(mode, ".json") ? grammar::grammar_from_flags("", text.str())
                                    : grammar::grammar_from_flags(text.str(), "");
  } catch (const Error& e) {
    throw Error("--sample " + mode + ": " + e.what());
  }
}

TokenPicker::TokenPicker(const std::string& mode, const tok::Tokenizer& tok, int n_vocab, unsigned seed)
    : n_vocab_(n_vocab), rng_(seed), random_id_(0, n_vocab - 1) {
  if (mode == "off") return;
  sampling::SamplerSettings s;  // llama.cpp's default chain
  s.seed = seed;
  s.grammar = grammar_of_sample_mode(mode);
  constrained_ = s.grammar != nullptr;
  if (constrained_) vocab_ = grammar::make_token_trie(tok);
  sampler_ = std::make_unique<sampling::Sampler>(s, vocab_);
}

int32_t TokenPicker::next(const float* logits) {
  if (!sampler_) return random_id_(rng_);
  const int32_t id = sampler_->sample(logits, n_vocab_);
  // An end token under a grammar means the document is over (or nothing
  // fits): it is not fed to the grammar, which starts again.
  const bool end_token = constrained_ && vocab_->is_eog(id);
  if (!end_token) sampler_->accept(id);
  if (constrained_ && (end_token || sampler_->grammar_complete())) {
    sampler_->reset();
    ++completed_;
  }
  return id;
}
}  // namespace oscar::bench
