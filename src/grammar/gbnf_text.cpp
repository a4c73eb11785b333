#include "grammar/gbnf_text.h"

#include <vector>

#include "tokenizer/unicode.h"

namespace oscar::grammar {

namespace {

std::string hex_escape(unsigned char c) {
  static const char* d = "0123456789ABCDEF";
  return std::string("\\x") + d[c >> 4] + d[c & 15];
}

// One code point as it may appear inside a GBNF literal or class.
std::string gbnf_char(uint32_t cp) {
  if (cp == '"' || cp == '\\' || cp == ']' || cp == '[' || cp == '-' || cp == '^') return std::string("\\") + (char)cp;
  if (cp < 0x20 || cp == 0x7F) return hex_escape((unsigned char)cp);
  std::string out;
  tok::append_utf8(out, (char32_t)cp);
  return out;
}

// --- integer ranges ------------------------------------------------------

std::string digits_between(char a, char b) {
  if (a == b) return gbnf_literal(std::string(1, a));
  return std::string("[") + a + "-" + b + "]";
}

// Decimal strings of equal length n with x <= v <= y (digit-wise).
std::string same_length(const std::string& x, const std::string& y) {
  const size_t n = x.size();
  if (n == 0) return "";
  if (x[0] == y[0]) {
    const std::string rest = same_length(x.substr(1), y.substr(1));
    return gbnf_literal(std::string(1, x[0])) + (rest.empty() ? "" : " " + rest);
  }
  const std::string xr = x.substr(1), yr = y.substr(1);
  const bool lo_full = xr.find_first_not_of('0') == std::string::npos;
  const bool hi_full = yr.find_first_not_of('9') == std::string::npos;
  std::vector<std::string> alts;
  if (!lo_full) alts.push_back(gbnf_literal(std::string(1, x[0])) + " (" + same_length(xr, std::string(n - 1, '9')) + ")");
  const char start = lo_full ? x[0] : (char)(x[0] + 1);
  const char end = hi_full ? y[0] : (char)(y[0] - 1);
  if (start <= end)
    alts.push_back(digits_between(start, end) + (n > 1 ? " [0-9]{" + std::to_string(n - 1) + "}" : ""));
  if (!hi_full) alts.push_back(gbnf_literal(std::string(1, y[0])) + " (" + same_length(std::string(n - 1, '0'), yr) + ")");
  std::string out = "(";
  for (size_t i = 0; i < alts.size(); ++i) out += (i ? " | " : "") + alts[i];
  return out + ")";
}

uint64_t pow10(size_t d) {
  uint64_t v = 1;
  while (d--) v *= 10;
  return v;
}

// Non-negative integers in [a, b]; b absent: unbounded.
std::string non_negative(uint64_t a, std::optional<uint64_t> b) {
  std::vector<std::string> alts;
  const size_t da = std::to_string(a).size();
  const size_t db = b ? std::to_string(*b).size() : da;
  for (size_t d = da; d <= db; ++d) {
    const uint64_t lo = std::max<uint64_t>(a, d == 1 ? 0 : pow10(d - 1));
    const uint64_t hi = (b && d == db) ? *b : pow10(d) - 1;
    if (lo <= hi) alts.push_back(same_length(std::to_string(lo), std::to_string(hi)));
  }
  if (!b) alts.push_back("[1-9] [0-9]{" + std::to_string(da) + ",}");
  std::string out = "(";
  for (size_t i = 0; i < alts.size(); ++i) out += (i ? " | " : "") + alts[i];
  return out + ")";
}

}  // namespace

std::string gbnf_literal(std::string_view bytes) {
  std::string out = "\"";
  for (unsigned char c : bytes) {
    if (c == '"' || c == '\\') out += std::string("\\") + (char)c;
    else if (c == '\n') out += "\\n";
    else if (c == '\r') out += "\\r";
    else if (c == '\t') out += "\\t";
    else if (c < 0x20 || c == 0x7F) out += hex_escape(c);
    else out += (char)c;
  }
  return out + "\"";
}

std::string integer_range_gbnf(std::optional<int64_t> lo, std::optional<int64_t> hi) {
  if (lo && hi && *lo > *hi) throw Error("integer range is empty (minimum " + std::to_string(*lo) + " > maximum " + std::to_string(*hi) + ")");
  std::vector<std::string> alts;
  // v >= 0 part
  if (!hi || *hi >= 0) {
    const uint64_t a = lo && *lo > 0 ? (uint64_t)*lo : 0;
    alts.push_back(non_negative(a, hi ? std::optional<uint64_t>((uint64_t)*hi) : std::nullopt));
  }
  // v < 0 part: -v in [max(-hi, 1), -lo]
  if (!lo || *lo < 0) {
    const uint64_t a = hi && *hi < 0 ? (uint64_t)(-(*hi + 1)) + 1 : 1;
    const std::optional<uint64_t> b = lo ? std::optional<uint64_t>((uint64_t)(-(*lo + 1)) + 1) : std::nullopt;
    alts.push_back("\"-\" " + non_negative(a, b));
  }
  std::string out = "(";
  for (size_t i = 0; i < alts.size(); ++i) out += (i ? " | " : "") + alts[i];
  return out + ")";
}

// --- regex subset ----------------------------------------------------------

namespace {

// Code points a raw JSON string character can never be (they need escapes).
const char* kJsonForbidden = "\\\"\\\\\\x00-\\x1F\\x7F";

class RegexConverter {
 public:
  RegexConverter(std::string_view p, const std::string& char_rule) : p_(p), char_rule_(char_rule) {}

  std::string run() {
    bool anchored_start = false, anchored_end = false;
    if (!p_.empty() && p_.front() == '^') anchored_start = true, p_.remove_prefix(1);
    if (!p_.empty() && p_.back() == '$' && (p_.size() < 2 || p_[p_.size() - 2] != '\\'))
      anchored_end = true, p_.remove_suffix(1);
    std::string body = alternation();
    if (i_ != p_.size()) fail("unexpected ')'");
    // JSON Schema patterns are not anchored: unanchored ends allow any text.
    if (!anchored_start) body = char_rule_ + "* " + body;
    if (!anchored_end) body += " " + char_rule_ + "*";
    return "(" + body + ")";
  }

 private:
  std::string_view p_;
  const std::string& char_rule_;
  size_t i_ = 0;
  int depth_ = 0;

  [[noreturn]] void fail(const std::string& what) const {
    throw Error("unsupported regex in 'pattern' at offset " + std::to_string(i_) + ": " + what);
  }
  bool eof() const { return i_ >= p_.size(); }

  uint32_t next_cp() {
    size_t j = i_;
    const uint32_t cp = decode_utf8_local(p_, j);
    if (cp == UINT32_MAX) fail("invalid UTF-8");
    i_ = j;
    return cp;
  }
  static uint32_t decode_utf8_local(std::string_view s, size_t& i);

  // A literal code point as it appears inside the JSON string.
  static std::string literal(uint32_t cp) {
    if (cp == '"') return gbnf_literal("\\\"");
    if (cp == '\\') return gbnf_literal("\\\\");
    if (cp == '\n') return gbnf_literal("\\n");
    if (cp == '\t') return gbnf_literal("\\t");
    if (cp == '\r') return gbnf_literal("\\r");
    if (cp < 0x20) fail_static("control character");
    return "[" + gbnf_char(cp) + "]";
  }
  [[noreturn]] static void fail_static(const std::string& what) { throw Error("unsupported regex in 'pattern': " + what); }

  std::string alternation() {
    std::string out = concat();
    while (!eof() && p_[i_] == '|') {
      i_++;
      out += " | " + concat();
    }
    return out;
  }

  std::string concat() {
    std::string out;
    while (!eof() && p_[i_] != '|' && p_[i_] != ')') {
      std::string a = atom();
      a = quantified(a);
      out += (out.empty() ? "" : " ") + a;
    }
    return out.empty() ? "\"\"" : out;
  }

  std::string quantified(const std::string& a) {
    if (eof()) return a;
    std::string q;
    const char c = p_[i_];
    if (c == '*' || c == '+' || c == '?') {
      q = std::string(1, c);
      i_++;
    } else if (c == '{') {
      const size_t close = p_.find('}', i_);
      if (close == std::string_view::npos) fail("unterminated {");
      q = std::string(p_.substr(i_, close - i_ + 1));
      for (char d : q.substr(1, q.size() - 2))
        if (!(d >= '0' && d <= '9') && d != ',') fail("bad repetition " + q);
      i_ = close + 1;
    } else {
      return a;
    }
    if (!eof() && p_[i_] == '?') i_++;  // lazy: same language
    if (!eof() && p_[i_] == '+') fail("possessive quantifier");
    return "(" + a + ")" + q;
  }

  std::string atom() {
    const char c = p_[i_];
    if (c == '(') {
      if (++depth_ > 200) fail("groups nested too deeply");
      i_++;
      if (!eof() && p_[i_] == '?') {
        if (i_ + 1 < p_.size() && p_[i_ + 1] == ':') i_ += 2;
        else fail("lookaround or named group");
      }
      std::string inner = alternation();
      if (eof() || p_[i_] != ')') fail("missing ')'");
      i_++;
      depth_--;
      return "(" + inner + ")";
    }
    if (c == '[') return char_class();
    if (c == '.') {
      i_++;
      return std::string("([^") + kJsonForbidden + "] | " + escapes_rule() + ")";
    }
    if (c == '\\') return escape(false);
    if (c == '*' || c == '+' || c == '?' || c == '{') fail(std::string("'") + c + "' with nothing to repeat");
    if (c == '^' || c == '$') fail("anchor inside the pattern");
    return literal(next_cp());
  }

  // A JSON escape sequence standing for one character (so '.' and negated
  // classes can still produce quotes, backslashes and newlines).
  static std::string escapes_rule() { return "\"\\\\\" [\"\\\\/bfnrt]"; }

  std::string shorthand(char c, bool in_class) {
    switch (c) {
      case 'd': return in_class ? "0-9" : "[0-9]";
      case 'w': return in_class ? "a-zA-Z0-9_" : "[a-zA-Z0-9_]";
      case 's': return in_class ? " " : "[ ]";
      case 'D': if (!in_class) return std::string("[^0-9") + kJsonForbidden + "]"; break;
      case 'W': if (!in_class) return std::string("[^a-zA-Z0-9_") + kJsonForbidden + "]"; break;
      case 'S': if (!in_class) return std::string("[^ ") + kJsonForbidden + "]"; break;
      default: return "";
    }
    fail(std::string("\\") + c + " inside a character class");
  }

  std::string escape(bool in_class) {
    i_++;
    if (eof()) fail("trailing backslash");
    const char c = p_[i_++];
    const std::string s = shorthand(c, in_class);
    if (!s.empty()) return s;
    uint32_t cp;
    switch (c) {
      case 'n': cp = '\n'; break;
      case 't': cp = '\t'; break;
      case 'r': cp = '\r'; break;
      case 'b': case 'B': fail("word boundary");
      default:
        if ((c >= '0' && c <= '9') || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z')) fail(std::string("\\") + c);
        cp = (unsigned char)c;
    }
    if (in_class) return gbnf_char(cp);
    return literal(cp);
  }

  std::string char_class() {
    i_++;
    bool negated = false;
    if (!eof() && p_[i_] == '^') negated = true, i_++;
    std::string body;
    bool first = true;
    while (!eof() && (p_[i_] != ']' || first)) {
      first = false;
      if (p_[i_] == '\\') {
        body += escape(true);
        continue;
      }
      const uint32_t lo = next_cp();
      if (lo == '"' || lo == '\\' || lo < 0x20) {
        if (!negated) fail("a quote, backslash or control character in a character class");
        continue;  // excluded from negated classes anyway
      }
      body += gbnf_char(lo);
      if (i_ + 1 < p_.size() && p_[i_] == '-' && p_[i_ + 1] != ']') {
        i_++;
        const uint32_t hi = next_cp();
        if (hi < lo) fail("backwards range");
        if (lo <= '"' && hi >= '"') fail("a range spanning '\"' or '\\\\'");
        if (lo <= '\\' && hi >= '\\') fail("a range spanning '\"' or '\\\\'");
        body += "-" + gbnf_char(hi);
      }
    }
    if (eof()) fail("unterminated character class");
    i_++;
    if (negated) return "[^" + body + kJsonForbidden + "]";
    return "[" + body + "]";
  }
};

uint32_t RegexConverter::decode_utf8_local(std::string_view s, size_t& i) {
  const unsigned char b0 = (unsigned char)s[i];
  if (b0 < 0x80) return (uint32_t)s[i++];
  int n = (b0 & 0xE0) == 0xC0 ? 1 : (b0 & 0xF0) == 0xE0 ? 2 : (b0 & 0xF8) == 0xF0 ? 3 : -1;
  if (n < 0 || i + (size_t)n >= s.size()) return UINT32_MAX;
  uint32_t cp = b0 & (0x3F >> n);
  for (int k = 1; k <= n; ++k) {
    const unsigned char b = (unsigned char)s[i + (size_t)k];
    if ((b & 0xC0) != 0x80) return UINT32_MAX;
    cp = (cp << 6) | (b & 0x3F);
  }
  i += (size_t)n + 1;
  return cp;
}

}  // namespace

std::string regex_to_gbnf(std::string_view pattern, const std::string& char_rule) {
  return RegexConverter(pattern, char_rule).run();
}

}  // namespace oscar::grammar
