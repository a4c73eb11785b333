#include "vocab_source.h"

#include <filesystem>

#include "core/error.h"
#include "tokenizer/hf_tokenizer_json.h"

namespace oscar::mkmodel {

std::vector<gguf::KeyValue> vocab_from_tokenizer_json(const std::string& path) {
  const auto config = std::filesystem::path(path).parent_path() / "tokenizer_config.json";
  return tokenizer::vocab_metadata_from_hf(path, std::filesystem::exists(config) ? config.string() : "");
}

namespace {
gguf::Value* find(std::vector<gguf::KeyValue>& kv, const std::string& key) {
  for (auto& p : kv)
    if (p.key == key) return &p.value;
  return nullptr;
}
}  // namespace

int vocab_size(const std::vector<gguf::KeyValue>& vocab) {
  for (const auto& p : vocab)
    if (p.key == "tokenizer.ggml.tokens" && p.value.as_array()) return (int)p.value.as_array()->items.size();
  throw Error("vocabulary has no tokenizer.ggml.tokens array");
}

void pad_vocab(std::vector<gguf::KeyValue>& vocab, int n) {
  gguf::Value* tokens = find(vocab, "tokenizer.ggml.tokens");
  require(tokens && tokens->as_array(), "vocabulary has no tokenizer.ggml.tokens array");
  auto& items = std::get<std::shared_ptr<gguf::Array>>(tokens->v)->items;
  const int have = (int)items.size();
  for (int i = have; i < n; ++i) items.push_back(gguf::Value::str("[PAD" + std::to_string(i) + "]"));
  if (gguf::Value* types = find(vocab, "tokenizer.ggml.token_type"); types && types->as_array()) {
    auto& t = std::get<std::shared_ptr<gguf::Array>>(types->v)->items;
    while ((int)t.size() < n) t.push_back(gguf::Value::i32(5));
  }
  if (gguf::Value* scores = find(vocab, "tokenizer.ggml.scores"); scores && scores->as_array()) {
    auto& t = std::get<std::shared_ptr<gguf::Array>>(scores->v)->items;
    while ((int)t.size() < n) t.push_back(gguf::Value::f32(-1000.0f));
  }
}

}  // namespace oscar::mkmodel
