// Jinja parser: turns the lexer's tokens into an ast::Template, following
// jinja2's grammar and operator precedence (jinja2/parser.py) so that
// expressions such as `not x is defined` or `a + b | tojson` group the way
// jinja2 groups them.
#pragma once

#include <string_view>

#include "chat/ast.h"
#include "chat/lexer.h"

namespace oscar::chat {

struct ParserOptions {
  LexerOptions lexer;
  // Deepest nesting of statements/brackets/unary operators accepted; deeper
  // templates are refused instead of exhausting the C++ stack.
  int max_nesting = 256;
};

// Throws TemplateError("TemplateSyntaxError", ...) with the line.
ast::Template parse_template(std::string_view source, const ParserOptions& opt = {});

}  // namespace oscar::chat
