#include "tokenizer/vocab.h"

#include <algorithm>
#include <cstdio>
#include <unordered_map>

#include "core/error.h"
#include "tokenizer/unicode.h"

namespace oscar::tok {

namespace {

using gguf::Array;
using gguf::KeyValue;
using gguf::Value;
using gguf::ValueType;

// Typed reads straight from the Value variant, so this library needs only
// the header of the GGUF value model. Every wrong type is a clear error.
class Meta {
 public:
  explicit Meta(const std::vector<KeyValue>& kvs) {
    for (const auto& kv : kvs) by_key_[kv.key] = &kv.value;
  }
  const Value* find(const std::string& key) const {
    auto it = by_key_.find(key);
    return it == by_key_.end() ? nullptr : it->second;
  }
  std::optional<std::string> str(const std::string& key) const {
    const Value* v = find(key);
    if (!v) return std::nullopt;
    const auto* s = std::get_if<std::string>(&v->v);
    if (v->type != ValueType::STRING || !s) fail(key, "must be a string");
    return *s;
  }
  std::optional<int64_t> integer(const std::string& key) const {
    const Value* v = find(key);
    if (!v) return std::nullopt;
    if (auto* u = std::get_if<uint64_t>(&v->v); u && v->type != ValueType::BOOL) {
      if (*u > (uint64_t)INT64_MAX) fail(key, "is out of range");
      return (int64_t)*u;
    }
    if (auto* i = std::get_if<int64_t>(&v->v)) return *i;
    fail(key, "must be an integer");
  }
  std::optional<bool> boolean(const std::string& key) const {
    const Value* v = find(key);
    if (!v) return std::nullopt;
    if (auto* u = std::get_if<uint64_t>(&v->v)) return *u != 0;
    if (auto* i = std::get_if<int64_t>(&v->v)) return *i != 0;
    fail(key, "must be a bool");
  }
  // An array whose elements are all of kind `want` ("string", "int", "float").
  const Array* array(const std::string& key, const char* want) const {
    const Value* v = find(key);
    if (!v) return nullptr;
    const auto* p = std::get_if<std::shared_ptr<Array>>(&v->v);
    if (v->type != ValueType::ARRAY || !p || !*p) fail(key, std::string("must be an array of ") + want);
    const Array& a = **p;
    const std::string w = want;
    const bool ok = (w == "string" && a.elem_type == ValueType::STRING) ||
                    (w == "float" && (a.elem_type == ValueType::FLOAT32 || a.elem_type == ValueType::FLOAT64)) ||
                    (w == "int" && a.elem_type != ValueType::STRING && a.elem_type != ValueType::ARRAY &&
                     a.elem_type != ValueType::FLOAT32 && a.elem_type != ValueType::FLOAT64 &&
                     a.elem_type != ValueType::BOOL);
    if (!ok) fail(key, std::string("must be an array of ") + want);
    return &a;
  }
  [[noreturn]] static void fail(const std::string& key, const std::string& what) {
    throw Error("tokenizer metadata: '" + key + "' " + what);
  }

 private:
  std::unordered_map<std::string, const Value*> by_key_;
};

const std::string& item_string(const Array& a, size_t i, const char* key) {
  const auto* s = std::get_if<std::string>(&a.items[i].v);
  if (!s) Meta::fail(key, "element " + std::to_string(i) + " is not a string");
  return *s;
}

int64_t item_int(const Array& a, size_t i, const char* key) {
  if (auto* u = std::get_if<uint64_t>(&a.items[i].v)) return (int64_t)*u;
  if (auto* s = std::get_if<int64_t>(&a.items[i].v)) return *s;
  Meta::fail(key, "element " + std::to_string(i) + " is not an integer");
}

double item_float(const Array& a, size_t i, const char* key) {
  if (auto* d = std::get_if<double>(&a.items[i].v)) return *d;
  Meta::fail(key, "element " + std::to_string(i) + " is not a number");
}

}  // namespace

Vocab Vocab::from_metadata(const std::vector<KeyValue>& kvs) {
  const Meta m(kvs);
  Vocab vb;
  auto model = m.str("tokenizer.ggml.model");
  if (!model) throw Error("tokenizer metadata: 'tokenizer.ggml.model' is missing (not a model with a vocabulary?)");
  vb.model_ = *model;
  if (vb.model_ == "llama")
    vb.kind_ = VocabKind::Spm;
  else if (vb.model_ == "gpt2")
    vb.kind_ = VocabKind::ByteBpe;
  else if (vb.model_ == "gemma4")
    vb.kind_ = VocabKind::GemmaBpe;
  else
    throw Error("tokenizer metadata: unsupported 'tokenizer.ggml.model' = '" + vb.model_ +
                "' (supported: llama, gpt2, gemma4)");
  vb.pre_ = m.str("tokenizer.ggml.pre").value_or("");

  const Array* toks = m.array("tokenizer.ggml.tokens", "string");
  if (!toks) throw Error("tokenizer metadata: 'tokenizer.ggml.tokens' is missing");
  if (toks->items.empty()) throw Error("tokenizer metadata: 'tokenizer.ggml.tokens' is empty");
  if (toks->items.size() > (size_t)INT32_MAX) throw Error("tokenizer metadata: too many tokens");
  const size_t n = toks->items.size();

  const Array* types = m.array("tokenizer.ggml.token_type", "int");
  if (types && types->items.size() != n)
    throw Error("tokenizer metadata: 'tokenizer.ggml.token_type' has " + std::to_string(types->items.size()) +
                " entries but there are " + std::to_string(n) + " tokens");
  const Array* scores = m.array("tokenizer.ggml.scores", "float");
  if (scores && scores->items.size() != n)
    throw Error("tokenizer metadata: 'tokenizer.ggml.scores' has " + std::to_string(scores->items.size()) +
                " entries but there are " + std::to_string(n) + " tokens");
  if (vb.kind_ == VocabKind::Spm && !scores)
    throw Error("tokenizer metadata: 'tokenizer.ggml.scores' is required for model 'llama'");

  vb.tokens_.resize(n);
  vb.index_.reserve(n);
  for (size_t i = 0; i < n; ++i) {
    TokenData& t = vb.tokens_[i];
    t.text = item_string(*toks, i, "tokenizer.ggml.tokens");
    if (types) {
      const int64_t ty = item_int(*types, i, "tokenizer.ggml.token_type");
      if (ty < 0 || ty > 6)
        throw Error("tokenizer metadata: 'tokenizer.ggml.token_type' element " + std::to_string(i) +
                    " has unknown type " + std::to_string(ty));
      t.type = ty == 0 ? TokenType::Normal : (TokenType)ty;
    }
    if (scores) t.score = (float)item_float(*scores, i, "tokenizer.ggml.scores");
    vb.index_[t.text] = (TokenId)i;
  }

  if (vb.kind_ != VocabKind::Spm) {
    const Value* mv = m.find("tokenizer.ggml.merges");
    if (!mv) throw Error("tokenizer metadata: 'tokenizer.ggml.merges' is required for model '" + vb.model_ + "'");
    m.array("tokenizer.ggml.merges", "string");
    vb.build_merges(*mv);
    if (vb.kind_ == VocabKind::ByteBpe) (void)vb.pre_;  // checked when the pre-tokenizer is built
  }

  // Defaults follow llama.cpp: SentencePiece vocabularies have <unk>=0,
  // <s>=1, </s>=2, add BOS and a dummy-prefix space; Gemma 4 adds BOS only.
  if (vb.kind_ == VocabKind::Spm) {
    vb.unk_ = 0;
    vb.bos_ = 1;
    vb.eos_ = 2;
    vb.add_bos_ = true;
    vb.add_space_prefix_ = true;
  } else if (vb.kind_ == VocabKind::GemmaBpe) {
    vb.add_bos_ = true;
  }
  auto read_id = [&](const char* key, TokenId& dst) {
    if (auto v = m.integer(key)) {
      // Some converters write -1 / UINT32_MAX for "none".
      if (*v == -1 || *v == (int64_t)UINT32_MAX) {
        dst = kNoToken;
        return;
      }
      if (*v < 0 || (uint64_t)*v >= n)
        throw Error(std::string("tokenizer metadata: '") + key + "' = " + std::to_string(*v) +
                    " is outside the vocabulary (" + std::to_string(n) + " tokens)");
      dst = (TokenId)*v;
    }
  };
  read_id("tokenizer.ggml.bos_token_id", vb.bos_);
  read_id("tokenizer.ggml.eos_token_id", vb.eos_);
  read_id("tokenizer.ggml.unknown_token_id", vb.unk_);
  read_id("tokenizer.ggml.padding_token_id", vb.pad_);
  read_id("tokenizer.ggml.seperator_token_id", vb.sep_);
  read_id("tokenizer.ggml.eot_token_id", vb.eot_);
  read_id("tokenizer.ggml.eom_token_id", vb.eom_);
  read_id("tokenizer.ggml.fim_pre_token_id", vb.fim_.pre);
  read_id("tokenizer.ggml.fim_suf_token_id", vb.fim_.suf);
  read_id("tokenizer.ggml.fim_mid_token_id", vb.fim_.mid);
  read_id("tokenizer.ggml.fim_pad_token_id", vb.fim_.pad);
  read_id("tokenizer.ggml.fim_rep_token_id", vb.fim_.rep);
  read_id("tokenizer.ggml.fim_sep_token_id", vb.fim_.sep);
  if (auto b = m.boolean("tokenizer.ggml.add_bos_token")) vb.add_bos_ = *b;
  if (auto b = m.boolean("tokenizer.ggml.add_eos_token")) vb.add_eos_ = *b;
  if (auto b = m.boolean("tokenizer.ggml.add_space_prefix")) vb.add_space_prefix_ = *b;
  if (vb.add_bos_ && vb.bos_ == kNoToken)
    throw Error("tokenizer metadata: 'tokenizer.ggml.add_bos_token' is true but there is no BOS token");
  if (vb.add_eos_ && vb.eos_ == kNoToken)
    throw Error("tokenizer metadata: 'tokenizer.ggml.add_eos_token' is true but there is no EOS token");
  vb.chat_template_ = m.str("tokenizer.chat_template").value_or("");

  vb.build_derived();
  return vb;
}

void Vocab::build_merges(const Value& v) {
  const Array& a = **std::get_if<std::shared_ptr<Array>>(&v.v);
  merges_.reserve(a.items.size());
  for (size_t i = 0; i < a.items.size(); ++i) {
    const std::string& s = item_string(a, i, "tokenizer.ggml.merges");
    // "left right": split at the first space after the first byte, so a
    // left part that is itself a space still works.
    const size_t sp = s.find(' ', 1);
    if (sp == std::string::npos || sp + 1 >= s.size())
      throw Error("tokenizer metadata: 'tokenizer.ggml.merges' element " + std::to_string(i) + " ('" + s +
                  "') is not of the form 'left right'");
    const TokenId l = find(std::string_view(s).substr(0, sp));
    const TokenId r = find(std::string_view(s).substr(sp + 1));
    std::string joined = s.substr(0, sp) + s.substr(sp + 1);
    const TokenId res = find(joined);
    // A merge whose parts or result are not tokens can never fire; skip it
    // (converted vocabularies occasionally carry such entries).
    if (l == kNoToken || r == kNoToken || res == kNoToken) continue;
    const uint64_t key = ((uint64_t)(uint32_t)l << 32) | (uint32_t)r;
    merges_.try_emplace(key, Merge{(int32_t)i, res});  // first (lowest) rank wins
  }
}

TokenId Vocab::find(std::string_view text) const {
  auto it = index_.find(text);
  return it == index_.end() ? kNoToken : it->second;
}

const Vocab::Merge* Vocab::find_merge(TokenId left, TokenId right) const {
  const uint64_t key = ((uint64_t)(uint32_t)left << 32) | (uint32_t)right;
  auto it = merges_.find(key);
  return it == merges_.end() ? nullptr : &it->second;
}

bool Vocab::is_eog(TokenId id) const {
  return id != kNoToken && std::find(eog_.begin(), eog_.end(), id) != eog_.end();
}

void Vocab::build_derived() {
  for (int b = 0; b < 256; ++b) {
    if (kind_ == VocabKind::ByteBpe) {
      std::string s;
      append_utf8(s, byte_to_unicode((uint8_t)b));
      byte_tokens_[b] = find(s);
    } else {
      char buf[8];
      std::snprintf(buf, sizeof buf, "<0x%02X>", b);
      byte_tokens_[b] = find(buf);
    }
  }

  // End-of-generation set: explicit ids plus well-known end-of-turn markers
  // (the same heuristic llama.cpp applies to converted vocabularies).
  static constexpr const char* kEogTexts[] = {
      "<|eot_id|>", "<|im_end|>", "<|end|>",          "<end_of_turn>",         "<|endoftext|>",
      "<|eom_id|>", "<EOT>",      "_<EOT>",           "<|end_of_text|>",       "<｜end▁of▁sentence｜>",
  };
  auto add_eog = [&](TokenId id) {
    if (id != kNoToken && std::find(eog_.begin(), eog_.end(), id) == eog_.end()) eog_.push_back(id);
  };
  add_eog(eos_);
  add_eog(eot_);
  add_eog(eom_);
  for (const char* t : kEogTexts) {
    const TokenId id = find(t);
    if (id != kNoToken && (type(id) == TokenType::Control || type(id) == TokenType::UserDefined)) add_eog(id);
  }

  for (size_t i = 0; i < tokens_.size(); ++i) {
    const TokenType t = tokens_[i].type;
    if ((t == TokenType::Control || t == TokenType::UserDefined || t == TokenType::Unknown) &&
        !tokens_[i].text.empty())
      specials_.push_back((TokenId)i);
  }
}

}  // namespace oscar::tok
