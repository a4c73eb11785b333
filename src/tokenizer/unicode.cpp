#include "tokenizer/unicode.h"

#include <utf8proc.h>

#include <array>
#include <cstdlib>

namespace oscar::tok {

size_t utf8_seq_len(uint8_t lead) {
  if (lead < 0x80) return 1;
  if ((lead & 0xE0) == 0xC0) return 2;
  if ((lead & 0xF0) == 0xE0) return 3;
  if ((lead & 0xF8) == 0xF0) return 4;
  return 1;  // continuation byte or invalid lead: treat as a single unit
}

std::vector<std::string_view> utf8_chars(std::string_view s) {
  std::vector<std::string_view> out;
  out.reserve(s.size());
  size_t i = 0;
  while (i < s.size()) {
    size_t n = utf8_seq_len((uint8_t)s[i]);
    // A lead byte without all its continuation bytes stands alone, so a
    // malformed sequence never swallows the (valid) bytes after it.
    bool ok = n <= s.size() - i;
    for (size_t k = 1; ok && k < n; ++k) ok = ((uint8_t)s[i + k] & 0xC0) == 0x80;
    if (!ok) n = 1;
    out.push_back(s.substr(i, n));
    i += n;
  }
  return out;
}

void append_utf8(std::string& out, char32_t cp) {
  if (cp < 0x80) {
    out += (char)cp;
  } else if (cp < 0x800) {
    out += (char)(0xC0 | (cp >> 6));
    out += (char)(0x80 | (cp & 0x3F));
  } else if (cp < 0x10000) {
    out += (char)(0xE0 | (cp >> 12));
    out += (char)(0x80 | ((cp >> 6) & 0x3F));
    out += (char)(0x80 | (cp & 0x3F));
  } else {
    out += (char)(0xF0 | (cp >> 18));
    out += (char)(0x80 | ((cp >> 12) & 0x3F));
    out += (char)(0x80 | ((cp >> 6) & 0x3F));
    out += (char)(0x80 | (cp & 0x3F));
  }
}

bool is_valid_utf8(std::string_view s) {
  size_t i = 0;
  while (i < s.size()) {
    size_t len = 1;
    const char32_t cp = decode_utf8(s.substr(i), len);
    if (cp == 0xFFFD && s.compare(i, 3, "\xEF\xBF\xBD") != 0) return false;
    // Reject overlong forms, surrogates and out-of-range values.
    if ((len == 2 && cp < 0x80) || (len == 3 && cp < 0x800) || (len == 4 && (cp < 0x10000 || cp > 0x10FFFF)) ||
        (cp >= 0xD800 && cp <= 0xDFFF))
      return false;
    i += len;
  }
  return true;
}

char32_t decode_utf8(std::string_view s, size_t& len) {
  len = 1;
  if (s.empty()) return 0xFFFD;
  const uint8_t b0 = (uint8_t)s[0];
  const size_t n = utf8_seq_len(b0);
  if (n == 1) return b0 < 0x80 ? b0 : 0xFFFD;
  if (n > s.size()) return 0xFFFD;
  char32_t cp = b0 & (0x7F >> n);
  for (size_t i = 1; i < n; ++i) {
    const uint8_t b = (uint8_t)s[i];
    if ((b & 0xC0) != 0x80) return 0xFFFD;
    cp = (cp << 6) | (b & 0x3F);
  }
  len = n;
  return cp;
}

size_t utf8_incomplete_tail(std::string_view s) {
  // Look back at most 3 bytes for the lead byte of the last sequence.
  const size_t lookback = s.size() < 3 ? s.size() : 3;
  for (size_t k = 1; k <= lookback; ++k) {
    const uint8_t b = (uint8_t)s[s.size() - k];
    if ((b & 0xC0) == 0x80) continue;  // continuation byte: keep looking
    const size_t need = utf8_seq_len(b);
    // A lead byte with fewer followers than it announces is incomplete.
    return (need > 1 && need > k) ? k : 0;
  }
  return 0;  // only continuation bytes (malformed): nothing to wait for
}

namespace {

// Bytes that GPT-2 keeps as themselves: printable Latin-1 minus the soft hyphen.
constexpr bool gpt2_self_mapped(unsigned b) {
  return (b >= 33 && b <= 126) || (b >= 161 && b <= 172) || (b >= 174 && b <= 255);
}

// The remaining 68 bytes map, in increasing byte order, to U+0100, U+0101, ...
constexpr std::array<char32_t, 256> make_byte_table() {
  std::array<char32_t, 256> t{};
  unsigned next = 256;
  for (unsigned b = 0; b < 256; ++b) t[b] = gpt2_self_mapped(b) ? b : next++;
  return t;
}

constexpr std::array<char32_t, 256> kByteToUnicode = make_byte_table();

}  // namespace

char32_t byte_to_unicode(uint8_t b) { return kByteToUnicode[b]; }

bool unicode_to_byte(char32_t cp, uint8_t& b) {
  if (cp < 256) {
    if (!gpt2_self_mapped(cp)) return false;
    b = (uint8_t)cp;
    return true;
  }
  if (cp >= 256 + 68) return false;
  // cp - 256 is the index among the non-self-mapped bytes.
  unsigned idx = cp - 256;
  for (unsigned x = 0; x < 256; ++x) {
    if (gpt2_self_mapped(x)) continue;
    if (idx == 0) {
      b = (uint8_t)x;
      return true;
    }
    --idx;
  }
  return false;
}

std::string bytes_to_gpt2(std::string_view bytes) {
  std::string out;
  out.reserve(bytes.size() * 2);
  for (char c : bytes) append_utf8(out, kByteToUnicode[(uint8_t)c]);
  return out;
}

std::string gpt2_to_bytes(std::string_view text) {
  std::string out;
  out.reserve(text.size());
  size_t i = 0;
  while (i < text.size()) {
    size_t len = 1;
    const char32_t cp = decode_utf8(text.substr(i), len);
    uint8_t b = 0;
    if (unicode_to_byte(cp, b))
      out += (char)b;
    else
      out.append(text.substr(i, len));
    i += len;
  }
  return out;
}

std::string nfc(std::string_view s) {
  // Pure ASCII is already NFC; skip the library call for the common case.
  bool ascii = true;
  for (char c : s) {
    if ((uint8_t)c >= 0x80) {
      ascii = false;
      break;
    }
  }
  if (ascii || s.empty()) return std::string(s);
  utf8proc_uint8_t* dst = nullptr;
  const utf8proc_ssize_t n = utf8proc_map(reinterpret_cast<const utf8proc_uint8_t*>(s.data()),
                                          (utf8proc_ssize_t)s.size(), &dst,
                                          (utf8proc_option_t)(UTF8PROC_STABLE | UTF8PROC_COMPOSE));
  if (n < 0) return std::string(s);
  std::string out(reinterpret_cast<const char*>(dst), (size_t)n);
  std::free(dst);
  return out;
}

std::string escape_spaces(std::string_view s) {
  std::string out;
  out.reserve(s.size() + s.size() / 2);
  for (char c : s) {
    if (c == ' ')
      out.append(kSpmSpace);
    else
      out += c;
  }
  return out;
}

std::string unescape_spaces(std::string_view s) {
  std::string out;
  out.reserve(s.size());
  size_t i = 0;
  while (i < s.size()) {
    if (s.compare(i, kSpmSpace.size(), kSpmSpace) == 0) {
      out += ' ';
      i += kSpmSpace.size();
    } else {
      out += s[i++];
    }
  }
  return out;
}

}  // namespace oscar::tok
