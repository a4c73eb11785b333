// Vocabulary metadata for oscar-mkmodel: from a Hugging Face tokenizer.json,
// and helpers to measure and pad a vocabulary given as GGUF metadata.
#pragma once

#include <string>
#include <vector>

#include "gguf/gguf_value.h"

namespace oscar::mkmodel {

// tokenizer.ggml.* (+ chat template from a tokenizer_config.json beside the
// file, when present) as a converted GGUF would carry them.
std::vector<gguf::KeyValue> vocab_from_tokenizer_json(const std::string& path);

// Number of entries of tokenizer.ggml.tokens; throws when absent.
int vocab_size(const std::vector<gguf::KeyValue>& vocab);

// Appends "[PAD<i>]" tokens (type unused) so the vocabulary has n entries,
// keeping tokens, token_type and scores the same length.
void pad_vocab(std::vector<gguf::KeyValue>& vocab, int n);

}  // namespace oscar::mkmodel
