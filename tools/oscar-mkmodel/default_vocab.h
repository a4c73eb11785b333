// The vocabulary oscar-mkmodel writes when no tokenizer.json is given: a
// small byte-level BPE vocabulary in the layout of converted GGUFs
// (tokenizer.ggml.model "gpt2"), so every byte string can be tokenized.
#pragma once

#include <vector>

#include "gguf/gguf_value.h"
#include "model_spec.h"

namespace oscar::mkmodel {

// Metadata pairs (tokenizer.ggml.* and tokenizer.chat_template).
std::vector<gguf::KeyValue> default_vocab(const ModelSpec& spec);

}  // namespace oscar::mkmodel
