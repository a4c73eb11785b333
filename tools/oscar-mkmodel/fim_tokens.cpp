#include "fim_tokens.h"

#include <memory>
#include <string>

#include "core/error.h"

namespace oscar::mkmodel {

namespace {

std::vector<gguf::Value>* array_of(std::vector<gguf::KeyValue>& kv, const std::string& key) {
  for (auto& p : kv)
    if (p.key == key && p.value.as_array()) return &std::get<std::shared_ptr<gguf::Array>>(p.value.v)->items;
  return nullptr;
}

}  // namespace

void add_fim_tokens(std::vector<gguf::KeyValue>& vocab) {
  static constexpr const char* kFim[][2] = {
      {"fim_pre", "<|fim_prefix|>"}, {"fim_suf", "<|fim_suffix|>"}, {"fim_mid", "<|fim_middle|>"},
      {"fim_pad", "<|fim_pad|>"},    {"fim_rep", "<|repo_name|>"},  {"fim_sep", "<|file_sep|>"}};
  std::vector<gguf::Value>* tokens = array_of(vocab, "tokenizer.ggml.tokens");
  std::vector<gguf::Value>* types = array_of(vocab, "tokenizer.ggml.token_type");
  if (!tokens || !types) throw Error("--fim: the vocabulary has no token list");
  std::vector<gguf::Value>* scores = array_of(vocab, "tokenizer.ggml.scores");
  for (const auto& [key, text] : kFim) {
    size_t id = 0;
    while (id < tokens->size() && !((*tokens)[id].as_string() && *(*tokens)[id].as_string() == text)) ++id;
    if (id == tokens->size()) {
      tokens->push_back(gguf::Value::str(text));
      types->push_back(gguf::Value::i32(3));  // control: matched in text only with special parsing
      if (scores) scores->push_back(gguf::Value::f32(0.0f));
    }
    vocab.push_back({std::string("tokenizer.ggml.") + key + "_token_id", gguf::Value::u32((uint32_t)id)});
  }
}

}  // namespace oscar::mkmodel
