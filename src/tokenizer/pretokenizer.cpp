#define PCRE2_CODE_UNIT_WIDTH 8
#include "tokenizer/pretokenizer.h"

#include <pcre2.h>

#include "core/error.h"

namespace oscar::tok {

namespace {

// The published split regexes (GPT-2's encoder.py; Llama 3 and Qwen2
// tokenizer.json "Split" pre-tokenizers).
constexpr const char* kGpt2Regex =
    R"('s|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+)";
constexpr const char* kLlama3Regex =
    R"((?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+)";
constexpr const char* kQwen2Regex =
    R"((?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+)";

// Unicode White_Space, as ranges usable inside a character class.
constexpr const char* kWhiteSpaceRanges =
    R"(\t\n\x{0B}\f\r\x{20}\x{85}\x{A0}\x{1680}\x{2000}-\x{200A}\x{2028}\x{2029}\x{202F}\x{205F}\x{3000})";

}  // namespace

std::string pre_name_for_regex(const std::string& regex) {
  if (regex == kQwen2Regex) return "qwen2";
  if (regex == kLlama3Regex) return "llama-bpe";
  if (regex == kGpt2Regex) return "gpt-2";
  return "";
}

std::vector<std::string> known_pre_tokenizers() {
  return {"default", "gpt-2", "gpt2", "llama-bpe", "llama3", "qwen2"};
}

PreTokenizerSpec pre_tokenizer_spec(const std::string& name) {
  PreTokenizerSpec s;
  if (name.empty() || name == "default" || name == "gpt-2" || name == "gpt2") {
    s.regexes = {kGpt2Regex};
  } else if (name == "llama-bpe" || name == "llama3") {
    s.regexes = {kLlama3Regex};
    s.ignore_merges = true;  // Llama 3's tokenizer.json sets ignore_merges
  } else if (name == "qwen2") {
    // Qwen2/Qwen3 tokenizers normalise to NFC before splitting.
    s.regexes = {kQwen2Regex};
    s.nfc = true;
  } else {
    std::string known;
    for (const auto& k : known_pre_tokenizers()) known += (known.empty() ? "" : ", ") + k;
    throw Error("tokenizer: unsupported pre-tokenizer 'tokenizer.ggml.pre' = '" + name +
                "' (supported: " + known + ")");
  }
  return s;
}

std::string normalise_whitespace_classes(const std::string& p) {
  std::string out;
  out.reserve(p.size() * 2);
  bool in_class = false;
  for (size_t i = 0; i < p.size(); ++i) {
    const char c = p[i];
    if (c == '\\' && i + 1 < p.size()) {
      const char n = p[i + 1];
      if (n == 's' || n == 'S') {
        if (in_class) {
          // \S inside a class cannot be expanded into ranges; keep PCRE2's.
          if (n == 's')
            out += kWhiteSpaceRanges;
          else
            out += "\\S";
        } else {
          out += (n == 's') ? "[" : "[^";
          out += kWhiteSpaceRanges;
          out += "]";
        }
      } else {
        out += c;
        out += n;
      }
      ++i;
      continue;
    }
    if (!in_class && c == '[') {
      in_class = true;
      out += c;
      // A ']' right after '[' or '[^' is a literal, not the class end.
      if (i + 1 < p.size() && p[i + 1] == '^') out += p[++i];
      if (i + 1 < p.size() && p[i + 1] == ']') out += p[++i];
      continue;
    }
    if (in_class && c == ']') in_class = false;
    out += c;
  }
  return out;
}

struct RegexSplitter::Compiled {
  pcre2_code* code = nullptr;
  ~Compiled() {
    if (code) pcre2_code_free(code);
  }
};

RegexSplitter::RegexSplitter(const std::vector<std::string>& patterns) {
  for (const auto& pat : patterns) {
    const std::string p = normalise_whitespace_classes(pat);
    int err = 0;
    PCRE2_SIZE err_off = 0;
    // UCP: \p{..}, \w, \d and case folding follow Unicode. MATCH_INVALID_UTF:
    // arbitrary bytes may be tokenized; invalid sequences simply never match
    // and end up in the gaps, which are kept as pieces.
    pcre2_code* code = pcre2_compile(reinterpret_cast<PCRE2_SPTR>(p.c_str()), p.size(),
                                     PCRE2_UTF | PCRE2_UCP | PCRE2_MATCH_INVALID_UTF, &err,
                                     &err_off, nullptr);
    if (!code) {
      PCRE2_UCHAR msg[256];
      pcre2_get_error_message(err, msg, sizeof msg);
      throw Error("tokenizer: cannot compile pre-tokenizer regex at offset " +
                  std::to_string(err_off) + ": " + reinterpret_cast<const char*>(msg));
    }
    pcre2_jit_compile(code, PCRE2_JIT_COMPLETE);  // optional speed-up; falls back silently
    auto c = std::make_unique<Compiled>();
    c->code = code;
    patterns_.push_back(std::move(c));
  }
}

RegexSplitter::RegexSplitter() = default;
RegexSplitter::RegexSplitter(RegexSplitter&&) noexcept = default;
RegexSplitter& RegexSplitter::operator=(RegexSplitter&&) noexcept = default;
RegexSplitter::~RegexSplitter() = default;

void RegexSplitter::split_one(const Compiled& re, std::string_view text,
                              std::vector<std::string_view>& out) const {
  // Match data is per call so one splitter may serve several threads.
  pcre2_match_data* md = pcre2_match_data_create_from_pattern(re.code, nullptr);
  if (!md) throw Error("tokenizer: out of memory creating regex match data");
  const auto* subject = reinterpret_cast<PCRE2_SPTR>(text.data());
  size_t pos = 0;   // where the next search starts
  size_t last = 0;  // end of the last emitted piece
  while (pos < text.size()) {
    const int rc = pcre2_match(re.code, subject, text.size(), pos, 0, md, nullptr);
    if (rc == PCRE2_ERROR_NOMATCH) break;
    if (rc < 0) {
      pcre2_match_data_free(md);
      PCRE2_UCHAR msg[256];
      pcre2_get_error_message(rc, msg, sizeof msg);
      throw Error(std::string("tokenizer: regex match failed: ") + reinterpret_cast<const char*>(msg));
    }
    const PCRE2_SIZE* ov = pcre2_get_ovector_pointer(md);
    const size_t s = ov[0], e = ov[1];
    if (e == s) {
      // Empty match: nothing to emit; step over one character.
      pos = s + 1;
      while (pos < text.size() && ((uint8_t)text[pos] & 0xC0) == 0x80) ++pos;
      continue;
    }
    if (s > last) out.push_back(text.substr(last, s - last));
    out.push_back(text.substr(s, e - s));
    last = pos = e;
  }
  if (last < text.size()) out.push_back(text.substr(last));
  pcre2_match_data_free(md);
}

std::vector<std::string_view> RegexSplitter::split(std::string_view text) const {
  std::vector<std::string_view> pieces{text};
  if (text.empty()) return {};
  for (const auto& re : patterns_) {
    std::vector<std::string_view> next;
    for (auto piece : pieces) split_one(*re, piece, next);
    pieces = std::move(next);
  }
  return pieces;
}

}  // namespace oscar::tok
