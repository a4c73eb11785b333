// Converts a Hugging Face tokenizer.json (+ optional tokenizer_config.json)
// into the `tokenizer.ggml.*` metadata a converted GGUF carries, so that
// Vocab::from_metadata() (and oscar-mkmodel --tokenizer-json) can use it.
//
// Mapping (mirrors llama.cpp's convert_hf_to_gguf.py / gguf-py):
//   - byte-level BPE (ByteLevel pre-tokenizer/decoder) -> model "gpt2", with
//     tokenizer.ggml.pre named after the Split regex (qwen2, llama-bpe, gpt-2);
//   - BPE with byte_fallback and ' ' -> "▁" but no prepended "▁" (Gemma)
//     -> model "gemma4" with scores (-1000 for added tokens, else 0), merges,
//     add_space_prefix false;
//   - the same with a prepended "▁" (Llama 2 style) -> model "llama" (SPM)
//     with scores derived from merge ranks and add_space_prefix true.
// Added tokens become CONTROL when marked special (or when they look special,
// e.g. "<|...|>", "<unused..>"), else USER_DEFINED, so they are matched in
// raw text before the model as Hugging Face does. Ids missing from both the
// vocab and added tokens are filled with "[PAD<id>]" UNUSED tokens.
// Special ids come from tokenizer_config.json's *_token entries, add_bos /
// add_eos from its add_*_token flags or the TemplateProcessing post
// processor, and tokenizer.chat_template from its chat_template (or a
// chat_template.jinja next to it).
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "gguf/gguf_value.h"

namespace oscar::tok {

// Throws oscar::Error on unreadable files, bad JSON or unsupported models.
std::vector<gguf::KeyValue> vocab_metadata_from_hf(const std::string& tokenizer_json_path,
                                                   const std::string& tokenizer_config_path_or_empty);

// The same from JSON text (config may be empty); `name` is used in errors.
std::vector<gguf::KeyValue> vocab_metadata_from_hf_text(std::string_view tokenizer_json,
                                                        std::string_view tokenizer_config_json,
                                                        const std::string& name = "tokenizer.json");

}  // namespace oscar::tok

// Callers may spell the namespace oscar::tokenizer (oscar-mkmodel does).
namespace oscar {
namespace tokenizer = tok;
}  // namespace oscar
