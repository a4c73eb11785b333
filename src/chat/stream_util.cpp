#include "chat/stream_util.h"

#include <algorithm>

namespace oscar::chat {

size_t partial_marker_suffix(std::string_view buf, std::initializer_list<std::string_view> markers) {
  size_t best = 0;
  for (std::string_view m : markers) {
    const size_t max_len = std::min(buf.size(), m.size() - 1);
    for (size_t len = max_len; len > best; --len) {
      if (buf.substr(buf.size() - len) == m.substr(0, len)) {
        best = len;
        break;
      }
    }
  }
  return best;
}

size_t incomplete_utf8_suffix(std::string_view buf) {
  // Look back at most 3 bytes for a lead byte whose sequence is cut off.
  for (size_t back = 1; back <= 3 && back <= buf.size(); ++back) {
    const auto c = static_cast<unsigned char>(buf[buf.size() - back]);
    if ((c & 0xC0) == 0x80) continue;  // continuation byte: keep looking
    size_t need = 0;
    if ((c & 0xE0) == 0xC0) need = 2;
    else if ((c & 0xF0) == 0xE0) need = 3;
    else if ((c & 0xF8) == 0xF0) need = 4;
    return (need > back) ? back : 0;
  }
  return 0;
}

namespace {
bool is_space(char c) { return c == ' ' || c == '\n' || c == '\t' || c == '\r'; }
}  // namespace

size_t leading_space(std::string_view s) {
  size_t n = 0;
  while (n < s.size() && is_space(s[n])) ++n;
  return n;
}

size_t trailing_space(std::string_view s) {
  size_t n = 0;
  while (n < s.size() && is_space(s[s.size() - 1 - n])) ++n;
  return n;
}

}  // namespace oscar::chat
