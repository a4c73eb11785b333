// Jinja lexer: splits template source into text and tag tokens, applying
// jinja2's whitespace control at lexing time exactly as jinja2 does
// ({%- -%} strip, trim_blocks, lstrip_blocks, {%+ +%}, trailing newline),
// and resolving comments and {% raw %} blocks.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace oscar::chat {

enum class TokenType {
  Text,        // literal template text
  VarBegin,    // {{
  VarEnd,      // }}
  BlockBegin,  // {%
  BlockEnd,    // %}
  Name,        // identifier or keyword
  String,      // string literal, value unescaped
  Int,
  Float,
  Op,          // operator or punctuation, text holds it
  Eof,
};

struct Token {
  TokenType type;
  std::string text;
  int64_t ival = 0;
  double fval = 0.0;
  int line = 1;
};

struct LexerOptions {
  bool trim_blocks = true;    // transformers' setting
  bool lstrip_blocks = true;  // transformers' setting
  bool keep_trailing_newline = false;
};

// Throws TemplateError("TemplateSyntaxError", ...) with the line on
// unterminated tags, strings and comments or unknown characters.
std::vector<Token> tokenize(std::string_view source, const LexerOptions& opt);

}  // namespace oscar::chat
