// UTF-8 and the small part of Unicode that Python's str methods need.
// Strings stay UTF-8 bytes everywhere; these helpers let the interpreter index,
// slice and case-map them by code point, as Python does. Invalid UTF-8 bytes
// are treated as one code point each so slicing never alters the bytes.
#pragma once

#include <cstddef>
#include <string>
#include <string_view>
#include <vector>

namespace oscar::chat::unicode {

// Decodes the code point at s[pos]; returns its byte length (>= 1). An invalid
// byte decodes to U+FFFD with length 1.
size_t decode(std::string_view s, size_t pos, char32_t* cp);
void append(std::string& out, char32_t cp);
// Byte offsets of every code point start, plus s.size() at the end.
std::vector<size_t> offsets(std::string_view s);
size_t length(std::string_view s);
bool is_ascii(std::string_view s);

// Python str.isspace() for one code point.
bool is_space(char32_t cp);
// Python str.isprintable() for one code point (approximate outside the
// common blocks: controls, separators and format characters are caught).
bool is_printable(char32_t cp);
bool is_alpha(char32_t cp);
bool is_digit(char32_t cp);
bool is_upper(char32_t cp);
bool is_lower(char32_t cp);

// Python str.upper()/lower() for Latin, Greek, Cyrillic and full-width Latin
// (the scripts chat templates and tool schemas use); other code points are
// left unchanged. upper() expands 'ß' to "SS" like Python.
std::string upper(std::string_view s);
std::string lower(std::string_view s);
char32_t to_upper(char32_t cp);
char32_t to_lower(char32_t cp);

}  // namespace oscar::chat::unicode
