// --fim: gives a vocabulary Qwen2.5-Coder's fill-in-the-middle tokens
// (<|fim_prefix|>, <|fim_suffix|>, <|fim_middle|>, <|fim_pad|>,
// <|repo_name|>, <|file_sep|>) as control tokens, named by the
// tokenizer.ggml.fim_*_token_id keys, so /infill can be tested.
#pragma once

#include <vector>

#include "gguf/gguf_value.h"

namespace oscar::mkmodel {

// Appends the tokens that are missing and sets the six keys.
void add_fim_tokens(std::vector<gguf::KeyValue>& vocab);

}  // namespace oscar::mkmodel
