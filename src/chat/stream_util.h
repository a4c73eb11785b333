// Helpers for parsing model output as it streams in, token text by token
// text: how much of the buffered tail must be held back because it may be
// the start of a marker (or of an unfinished UTF-8 character).
#pragma once

#include <initializer_list>
#include <string_view>

namespace oscar::chat {

// Length of the longest suffix of `buf` that is a proper prefix of one of
// `markers` (0 if none): that tail cannot be emitted yet.
size_t partial_marker_suffix(std::string_view buf, std::initializer_list<std::string_view> markers);
// Length of an incomplete UTF-8 sequence at the end of `buf` (0..3).
size_t incomplete_utf8_suffix(std::string_view buf);
// Bytes of leading / trailing ASCII whitespace.
size_t leading_space(std::string_view s);
size_t trailing_space(std::string_view s);

}  // namespace oscar::chat
