// UTF-8 and Unicode helpers shared by the tokenizers: splitting text into
// code points, the GPT-2 byte <-> printable-character map used by byte-level
// BPE vocabularies, NFC normalisation (utf8proc) and the SentencePiece
// whitespace escape (' ' <-> U+2581 "▁").
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace oscar::tok {

// "▁" (U+2581 LOWER ONE EIGHTH BLOCK), SentencePiece's visible space.
inline constexpr std::string_view kSpmSpace = "\xE2\x96\x81";

// Length of the UTF-8 sequence that starts with `lead` (1 for continuation
// or invalid lead bytes, so malformed input always advances).
size_t utf8_seq_len(uint8_t lead);

// Splits `s` into code points; every byte of a malformed sequence becomes a
// one-byte piece.
std::vector<std::string_view> utf8_chars(std::string_view s);

void append_utf8(std::string& out, char32_t cp);

// Whether `s` is well-formed UTF-8 (no overlongs, surrogates or values
// beyond U+10FFFF).
bool is_valid_utf8(std::string_view s);

// Decodes the code point at the start of `s`; returns U+FFFD for malformed
// input. `len` receives the bytes consumed (at least 1).
char32_t decode_utf8(std::string_view s, size_t& len);

// Number of bytes at the end of `s` that form the start of a UTF-8 sequence
// still missing continuation bytes (0..3). The streaming detokenizer holds
// these back until the rest arrives.
size_t utf8_incomplete_tail(std::string_view s);

// GPT-2 byte-level alphabet: every byte maps to one printable code point so
// BPE can work on text. byte_to_unicode(b) gives that code point.
char32_t byte_to_unicode(uint8_t b);
// Inverse map; returns false when `cp` is not in the alphabet.
bool unicode_to_byte(char32_t cp, uint8_t& b);
// Encodes raw bytes into the alphabet (as UTF-8) and back. Decoding leaves
// characters outside the alphabet as they are (their UTF-8 bytes).
std::string bytes_to_gpt2(std::string_view bytes);
std::string gpt2_to_bytes(std::string_view text);

// Unicode NFC (canonical composition). Invalid UTF-8 is returned unchanged:
// there is nothing meaningful to normalise and the byte-level tokenizer
// still encodes it exactly.
std::string nfc(std::string_view s);

// ' ' -> "▁" and back.
std::string escape_spaces(std::string_view s);
std::string unescape_spaces(std::string_view s);

}  // namespace oscar::tok
