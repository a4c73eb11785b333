// Pre-tokenization: splitting text into words before BPE, with the regex the
// original tokenizer uses. Each regex splits in Hugging Face's "Isolated"
// manner: every match is a word and so is every gap between matches, so no
// byte is ever dropped. Regexes run in sequence, each on the pieces the
// previous produced. Compiled with PCRE2 in UTF + UCP mode (JIT when
// available); the compiled code belongs to this object.
#pragma once

#include <memory>
#include <string>
#include <string_view>
#include <vector>

namespace oscar::tok {

// What a `tokenizer.ggml.pre` name implies for byte-level BPE.
struct PreTokenizerSpec {
  std::vector<std::string> regexes;  // applied in order
  bool nfc = false;                  // NFC-normalise text fragments first
  bool ignore_merges = false;        // a word that is already a token is not merged
};

// The spec for a pre-tokenizer name (as written by llama.cpp's converter:
// "gpt-2", "default", "llama-bpe", "qwen2", ...). Throws oscar::Error for
// names this implementation does not know.
PreTokenizerSpec pre_tokenizer_spec(const std::string& name);

// The pre-tokenizer name whose regex is exactly `regex` (as written in a
// tokenizer.json Split pre-tokenizer), or "" when it is not one we know.
std::string pre_name_for_regex(const std::string& regex);

// Names accepted by pre_tokenizer_spec(), for error messages and docs.
std::vector<std::string> known_pre_tokenizers();

class RegexSplitter {
 public:
  RegexSplitter();
  explicit RegexSplitter(const std::vector<std::string>& patterns);
  RegexSplitter(RegexSplitter&&) noexcept;
  RegexSplitter& operator=(RegexSplitter&&) noexcept;
  ~RegexSplitter();

  bool empty() const { return patterns_.empty(); }
  // Splits `text` into consecutive pieces that together cover it exactly.
  std::vector<std::string_view> split(std::string_view text) const;

 private:
  struct Compiled;
  std::vector<std::unique_ptr<Compiled>> patterns_;
  void split_one(const Compiled& re, std::string_view text, std::vector<std::string_view>& out) const;
};

// Rewrites \s and \S into explicit classes of the Unicode White_Space
// characters, which is what the reference tokenizers' regex engines match;
// PCRE2's UCP \s differs on a few code points (e.g. U+0085, U+180E).
std::string normalise_whitespace_classes(const std::string& pattern);

}  // namespace oscar::tok
