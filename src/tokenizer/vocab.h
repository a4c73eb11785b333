// A tokenizer vocabulary described by GGUF `tokenizer.ggml.*` metadata, the
// form llama.cpp's converter writes (and hf_tokenizer_json.h produces from a
// Hugging Face tokenizer.json). Built from a list of KeyValues, so it works
// the same for a GGUF file and for an in-memory conversion.
//
// Keys read: tokenizer.ggml.model ("llama" | "gpt2" | "gemma4"), .pre,
// .tokens, .token_type, .scores, .merges, .bos_token_id, .eos_token_id,
// .unknown_token_id, .padding_token_id, .seperator_token_id, .eot_token_id,
// .eom_token_id, .add_bos_token, .add_eos_token, .add_space_prefix, and
// tokenizer.chat_template. Malformed metadata throws oscar::Error naming the
// key and what is wrong.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "gguf/gguf_value.h"

namespace oscar::tok {

using TokenId = int32_t;
inline constexpr TokenId kNoToken = -1;

// llama.cpp's token types (tokenizer.ggml.token_type values).
enum class TokenType : int32_t {
  Undefined = 0,
  Normal = 1,
  Unknown = 2,
  Control = 3,
  UserDefined = 4,
  Unused = 5,
  Byte = 6,
};

// How text becomes tokens.
enum class VocabKind {
  Spm,        // "llama": SentencePiece, score-ordered merges, ▁ spaces, byte fallback
  ByteBpe,    // "gpt2": byte-level BPE (GPT-2 byte alphabet) after a regex pre-split
  GemmaBpe,   // "gemma4": rank-ordered BPE on raw code points, ▁ spaces, byte fallback
};

struct TokenData {
  std::string text;
  float score = 0.0f;
  TokenType type = TokenType::Normal;
};

// Transparent hashing so lookups by string_view need no allocation.
struct StringHash {
  using is_transparent = void;
  size_t operator()(std::string_view s) const { return std::hash<std::string_view>{}(s); }
};

// Fill-in-the-middle tokens (tokenizer.ggml.fim_*_token_id); kNoToken when
// the GGUF names none.
struct FimTokens {
  TokenId pre = kNoToken, suf = kNoToken, mid = kNoToken;  // prefix, suffix, middle
  TokenId pad = kNoToken, rep = kNoToken, sep = kNoToken;  // padding, repository name, file separator
};

class Vocab {
 public:
  // Throws oscar::Error on missing or malformed keys.
  static Vocab from_metadata(const std::vector<gguf::KeyValue>& kvs);

  VocabKind kind() const { return kind_; }
  const std::string& model() const { return model_; }  // tokenizer.ggml.model
  const std::string& pre() const { return pre_; }      // tokenizer.ggml.pre ("" if absent)

  size_t n_tokens() const { return tokens_.size(); }
  bool valid(TokenId id) const { return id >= 0 && (size_t)id < tokens_.size(); }
  const TokenData& token(TokenId id) const { return tokens_.at((size_t)id); }
  const std::string& text(TokenId id) const { return token(id).text; }
  TokenType type(TokenId id) const { return token(id).type; }
  bool is_control(TokenId id) const { return valid(id) && type(id) == TokenType::Control; }

  // Exact text -> id (kNoToken when absent). When a text appears twice the
  // later id wins, as in llama.cpp.
  TokenId find(std::string_view text) const;

  // BPE merges as (left id, right id) -> rank; result is the merged token.
  struct Merge {
    int32_t rank;
    TokenId result;
  };
  const Merge* find_merge(TokenId left, TokenId right) const;
  size_t n_merges() const { return merges_.size(); }

  // Token for a raw byte: "<0xNN>" (Spm, GemmaBpe) or the byte's GPT-2
  // character (ByteBpe); kNoToken when the vocabulary lacks it.
  TokenId byte_token(uint8_t b) const { return byte_tokens_[b]; }

  TokenId bos() const { return bos_; }
  TokenId eos() const { return eos_; }
  TokenId unk() const { return unk_; }
  TokenId pad() const { return pad_; }
  TokenId sep() const { return sep_; }
  TokenId eot() const { return eot_; }
  const FimTokens& fim() const { return fim_; }
  bool add_bos() const { return add_bos_; }
  bool add_eos() const { return add_eos_; }
  bool add_space_prefix() const { return add_space_prefix_; }
  // End of generation: EOS, EOT, EOM and control tokens whose text is a
  // known end-of-turn marker.
  bool is_eog(TokenId id) const;
  const std::vector<TokenId>& eog_ids() const { return eog_; }

  const std::string& chat_template() const { return chat_template_; }

  // Tokens matched in raw text before the model runs: user-defined tokens
  // always, control/unknown tokens when special parsing is requested.
  const std::vector<TokenId>& special_tokens() const { return specials_; }

 private:
  VocabKind kind_ = VocabKind::Spm;
  std::string model_, pre_;
  std::vector<TokenData> tokens_;
  std::unordered_map<std::string, TokenId, StringHash, std::equal_to<>> index_;
  std::unordered_map<uint64_t, Merge> merges_;
  TokenId byte_tokens_[256];
  TokenId bos_ = kNoToken, eos_ = kNoToken, unk_ = kNoToken, pad_ = kNoToken, sep_ = kNoToken;
  TokenId eot_ = kNoToken, eom_ = kNoToken;
  FimTokens fim_;
  bool add_bos_ = false, add_eos_ = false, add_space_prefix_ = false;
  std::vector<TokenId> eog_;
  std::vector<TokenId> specials_;
  std::string chat_template_;

  void build_merges(const gguf::Value& v);
  void build_derived();
};

}  // namespace oscar::tok
