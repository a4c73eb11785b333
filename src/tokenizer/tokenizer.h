// Text <-> token ids for a Vocab (see vocab.h).
//
// tokenize(): special/user-defined tokens written in the text are cut out
// first (leftmost-longest, like Hugging Face's added-token matching), then
// each remaining fragment goes through the vocabulary's model:
//   - ByteBpe (gpt2): optional NFC, regex pre-split chosen by
//     tokenizer.ggml.pre, GPT-2 byte alphabet, rank-ordered BPE merges;
//   - Spm (llama): dummy-prefix space, ' ' -> ▁, score-ordered merges of
//     adjacent pieces, <0xNN> byte fallback;
//   - GemmaBpe (gemma4): ' ' -> ▁, newline runs split off, rank-ordered BPE
//     on code points, <0xNN> byte fallback.
// detokenize() and StreamDetokenizer turn ids back into bytes; the streaming
// form holds back incomplete UTF-8 sequences so every chunk it returns is
// valid on its own.
#pragma once

#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "tokenizer/pretokenizer.h"
#include "tokenizer/vocab.h"

namespace oscar::tok {

class Tokenizer {
 public:
  explicit Tokenizer(Vocab vocab);
  static Tokenizer from_metadata(const std::vector<gguf::KeyValue>& kvs) {
    return Tokenizer(Vocab::from_metadata(kvs));
  }

  const Vocab& vocab() const { return vocab_; }

  // add_special: prepend BOS / append EOS as the metadata asks.
  // parse_special: recognise control tokens (e.g. "<|im_start|>") written in
  // the text; user-defined tokens are always recognised.
  std::vector<TokenId> tokenize(std::string_view text, bool add_special, bool parse_special) const;

  // The bytes a token stands for. Control tokens (BOS, <|im_end|>, ...)
  // render as their text only when `render_special`, else as nothing.
  std::string token_to_piece(TokenId id, bool render_special = false) const;

  // Concatenated pieces. remove_special drops a leading BOS and trailing EOS;
  // for vocabularies with a dummy-prefix space the first piece loses one
  // leading space, so detokenize(tokenize(x)) == x.
  std::string detokenize(std::span<const TokenId> ids, bool remove_special = false,
                         bool render_special = false) const;

  // Readable form of a token for listings (like llama-tokenize prints):
  // the piece with control tokens always shown.
  std::string display_piece(TokenId id) const { return token_to_piece(id, true); }

  // Whether the model step is reversible for any valid UTF-8 text (false
  // when NFC may change the text).
  bool normalizes() const { return spec_.nfc; }

 private:
  Vocab vocab_;
  PreTokenizerSpec spec_;
  RegexSplitter splitter_;

  struct Trie;
  std::shared_ptr<const Trie> trie_;  // special-token matcher (immutable)

  struct Fragment {
    std::string_view text;  // raw text when id == kNoToken
    TokenId id = kNoToken;
  };
  std::vector<Fragment> partition(std::string_view text, bool parse_special) const;

  void encode_byte_bpe(std::string_view text, std::vector<TokenId>& out) const;
  void encode_gemma(std::string_view text, std::vector<TokenId>& out) const;
  void encode_spm(std::string_view text, std::vector<TokenId>& out) const;
  // Rank-ordered BPE over `symbols` (pieces of one word); appends ids.
  void bpe_word(const std::vector<std::string_view>& symbols, std::vector<TokenId>& out,
                bool byte_fallback_hex) const;
  void push_bytes(std::string_view bytes, std::vector<TokenId>& out) const;
};

// Incremental detokenizer for streaming generation output.
class StreamDetokenizer {
 public:
  explicit StreamDetokenizer(const Tokenizer& tok, bool render_special = false)
      : tok_(tok), render_special_(render_special) {}
  // Appends one token; returns the text that is now complete (possibly "").
  std::string push(TokenId id);
  // Returns whatever is still held back (an incomplete sequence at the end
  // of generation is emitted as is).
  std::string finish();
  void reset() {
    pending_.clear();
    first_ = true;
  }

 private:
  const Tokenizer& tok_;
  bool render_special_;
  bool first_ = true;
  std::string pending_;
};

}  // namespace oscar::tok
