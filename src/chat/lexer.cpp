#include "chat/lexer.h"

#include <charconv>
#include <cmath>

#include "chat/template_error.h"
#include "chat/unicode.h"

namespace oscar::chat {

namespace {

[[noreturn]] void syntax_error(const std::string& msg, int line) {
  throw TemplateError("TemplateSyntaxError", msg, line);
}

bool is_name_start(char c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_' || static_cast<unsigned char>(c) >= 0x80;
}
bool is_name_char(char c) { return is_name_start(c) || (c >= '0' && c <= '9'); }
bool is_digit(char c) { return c >= '0' && c <= '9'; }
bool is_ws(char c) { return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\f' || c == '\v'; }

// Python's "unicode-escape" decoding of a string literal body, which is what
// jinja2 applies to its string literals.
std::string unescape(std::string_view s, int line) {
  std::string out;
  out.reserve(s.size());
  for (size_t i = 0; i < s.size(); ++i) {
    if (s[i] != '\\' || i + 1 >= s.size()) {
      out += s[i];
      continue;
    }
    const char c = s[++i];
    auto hex = [&](size_t digits) {
      uint32_t v = 0;
      for (size_t k = 1; k <= digits; ++k) {
        if (i + k >= s.size()) syntax_error("truncated escape in string", line);
        const char h = s[i + k];
        v <<= 4;
        if (h >= '0' && h <= '9')
          v |= h - '0';
        else if (h >= 'a' && h <= 'f')
          v |= h - 'a' + 10;
        else if (h >= 'A' && h <= 'F')
          v |= h - 'A' + 10;
        else
          syntax_error("invalid escape in string", line);
      }
      i += digits;
      if (v > 0x10FFFF) syntax_error("invalid escape in string", line);
      unicode::append(out, v);
    };
    switch (c) {
      case 'n': out += '\n'; break;
      case 't': out += '\t'; break;
      case 'r': out += '\r'; break;
      case '\\': out += '\\'; break;
      case '\'': out += '\''; break;
      case '"': out += '"'; break;
      case 'a': out += '\a'; break;
      case 'b': out += '\b'; break;
      case 'f': out += '\f'; break;
      case 'v': out += '\v'; break;
      case '\n': break;  // line continuation
      case 'x': hex(2); break;
      case 'u': hex(4); break;
      case 'U': hex(8); break;
      default:
        if (c >= '0' && c <= '7') {
          uint32_t v = c - '0';
          for (int k = 0; k < 2 && i + 1 < s.size() && s[i + 1] >= '0' && s[i + 1] <= '7'; ++k) v = v * 8 + (s[++i] - '0');
          unicode::append(out, v);
        } else {
          out += '\\';
          out += c;
        }
    }
  }
  return out;
}

class Lexer {
 public:
  Lexer(std::string_view source, const LexerOptions& opt) : opt_(opt) {
    // jinja2 normalizes every newline sequence to \n before lexing and drops
    // one trailing newline unless keep_trailing_newline is set.
    src_.reserve(source.size());
    for (size_t i = 0; i < source.size(); ++i) {
      if (source[i] == '\r') {
        src_ += '\n';
        if (i + 1 < source.size() && source[i + 1] == '\n') ++i;
      } else {
        src_ += source[i];
      }
    }
    if (!opt_.keep_trailing_newline && !src_.empty() && src_.back() == '\n') src_.pop_back();
  }

  std::vector<Token> run() {
    while (pos_ < src_.size()) {
      const size_t p = find_tag(pos_);
      if (p == std::string::npos) {
        emit_text(src_.substr(pos_), line_);
        count_lines(pos_, src_.size());
        pos_ = src_.size();
        break;
      }
      const char kind = src_[p + 1];
      const char sign = p + 2 < src_.size() ? src_[p + 2] : '\0';
      std::string text = src_.substr(pos_, p - pos_);
      if (sign == '-') {
        size_t e = text.size();
        while (e > 0 && is_ws(text[e - 1])) --e;
        text.resize(e);
      } else if (sign != '+' && opt_.lstrip_blocks && kind != '{') {
        // lstrip_blocks: drop spaces/tabs between a line start and the tag.
        const size_t nl = text.rfind('\n');
        const size_t l_pos = nl == std::string::npos ? 0 : nl + 1;
        if (l_pos > 0 || line_starting_) {
          bool only_blank = true;
          for (size_t i = l_pos; i < text.size(); ++i) only_blank &= (text[i] == ' ' || text[i] == '\t');
          if (only_blank) text.resize(l_pos);
        }
      }
      emit_text(std::move(text), line_);
      count_lines(pos_, p);
      pos_ = p + 2 + ((sign == '-' || sign == '+') ? 1 : 0);
      if (kind == '#') {
        lex_comment();
      } else if (kind == '%') {
        if (!try_raw(sign)) {
          push(TokenType::BlockBegin, "{%");
          lex_tag_body(false);
        }
      } else {
        push(TokenType::VarBegin, "{{");
        lex_tag_body(true);
      }
    }
    push(TokenType::Eof, "");
    return std::move(tokens_);
  }

 private:
  size_t find_tag(size_t from) const {
    for (size_t i = src_.find('{', from); i != std::string::npos; i = src_.find('{', i + 1)) {
      if (i + 1 < src_.size() && (src_[i + 1] == '{' || src_[i + 1] == '%' || src_[i + 1] == '#')) return i;
    }
    return std::string::npos;
  }

  void count_lines(size_t from, size_t to) {
    for (size_t i = from; i < to && i < src_.size(); ++i)
      if (src_[i] == '\n') ++line_;
  }

  void emit_text(std::string text, int line) {
    if (text.empty()) return;
    tokens_.push_back(Token{TokenType::Text, std::move(text), 0, 0.0, line});
  }

  void push(TokenType t, std::string text) { tokens_.push_back(Token{t, std::move(text), 0, 0.0, line_}); }

  // Whitespace handling after a tag ends. sign is '-', '+' or 0; `block`
  // says whether trim_blocks applies (block and comment tags, not {{ }}).
  void after_tag(char sign, bool block) {
    if (sign == '-') {
      while (pos_ < src_.size() && is_ws(src_[pos_])) {
        if (src_[pos_] == '\n') ++line_;
        ++pos_;
      }
      line_starting_ = pos_ > 0 && src_[pos_ - 1] == '\n';
      return;
    }
    if (block && sign != '+' && opt_.trim_blocks && pos_ < src_.size() && src_[pos_] == '\n') {
      ++pos_;
      ++line_;
      line_starting_ = true;
      return;
    }
    line_starting_ = false;
  }

  void lex_comment() {
    const int start_line = line_;
    const size_t end = src_.find("#}", pos_);
    if (end == std::string::npos) syntax_error("Missing end of comment tag", start_line);
    char sign = '\0';
    if (end > pos_ && (src_[end - 1] == '-' || src_[end - 1] == '+')) sign = src_[end - 1];
    count_lines(pos_, end);
    pos_ = end + 2;
    after_tag(sign, true);
  }

  // {% raw %}...{% endraw %}: the body is literal text.
  bool try_raw(char open_sign) {
    size_t q = pos_;
    while (q < src_.size() && is_ws(src_[q])) ++q;
    if (src_.compare(q, 3, "raw") != 0 || (q + 3 < src_.size() && is_name_char(src_[q + 3]))) return false;
    q += 3;
    while (q < src_.size() && is_ws(src_[q])) ++q;
    char end_sign = '\0';
    if (q < src_.size() && src_[q] == '-') end_sign = '-', ++q;
    if (src_.compare(q, 2, "%}") != 0) syntax_error("expected end of raw tag", line_);
    const int start_line = line_;
    count_lines(pos_, q + 2);
    pos_ = q + 2;
    if (end_sign == '-')
      while (pos_ < src_.size() && is_ws(src_[pos_])) count_lines(pos_, pos_ + 1), ++pos_;
    // Find {%[-+]? endraw [-+]?%}
    for (size_t p = find_tag(pos_); p != std::string::npos; p = find_tag(p + 1)) {
      if (src_[p + 1] != '%') continue;
      size_t r = p + 2;
      const char sign = r < src_.size() ? src_[r] : '\0';
      if (sign == '-' || sign == '+') ++r;
      while (r < src_.size() && is_ws(src_[r])) ++r;
      if (src_.compare(r, 6, "endraw") != 0) continue;
      r += 6;
      while (r < src_.size() && is_ws(src_[r])) ++r;
      char close = '\0';
      if (r < src_.size() && (src_[r] == '-' || src_[r] == '+')) close = src_[r++];
      if (src_.compare(r, 2, "%}") != 0) continue;
      std::string body = src_.substr(pos_, p - pos_);
      if (sign == '-') {
        size_t e = body.size();
        while (e > 0 && is_ws(body[e - 1])) --e;
        body.resize(e);
      } else if (sign != '+' && opt_.lstrip_blocks) {
        const size_t nl = body.rfind('\n');
        const size_t l_pos = nl == std::string::npos ? 0 : nl + 1;
        if (l_pos > 0) {
          bool only_blank = true;
          for (size_t i = l_pos; i < body.size(); ++i) only_blank &= (body[i] == ' ' || body[i] == '\t');
          if (only_blank) body.resize(l_pos);
        }
      }
      emit_text(std::move(body), line_);
      count_lines(pos_, r + 2);
      pos_ = r + 2;
      after_tag(close, true);
      return true;
    }
    syntax_error("Missing end of raw directive", start_line);
    (void)open_sign;
  }

  void lex_tag_body(bool is_var) {
    const int start_line = line_;
    std::string depth;  // stack of open brackets
    for (;;) {
      while (pos_ < src_.size() && is_ws(src_[pos_])) {
        if (src_[pos_] == '\n') ++line_;
        ++pos_;
      }
      if (pos_ >= src_.size())
        syntax_error(std::string("unexpected end of template, expected '") + (is_var ? "}}" : "%}") + "'",
                     start_line);
      if (depth.empty()) {
        const char* close = is_var ? "}}" : "%}";
        if (src_.compare(pos_, 2, close) == 0) {
          push(is_var ? TokenType::VarEnd : TokenType::BlockEnd, close);
          pos_ += 2;
          after_tag('\0', !is_var);
          return;
        }
        if ((src_[pos_] == '-' || (!is_var && src_[pos_] == '+')) && src_.compare(pos_ + 1, 2, close) == 0) {
          const char sign = src_[pos_];
          push(is_var ? TokenType::VarEnd : TokenType::BlockEnd, close);
          pos_ += 3;
          after_tag(sign, !is_var);
          return;
        }
      }
      const char c = src_[pos_];
      if (is_name_start(c)) {
        size_t e = pos_;
        while (e < src_.size() && is_name_char(src_[e])) ++e;
        push(TokenType::Name, src_.substr(pos_, e - pos_));
        pos_ = e;
      } else if (is_digit(c)) {
        lex_number();
      } else if (c == '\'' || c == '"') {
        lex_string(c);
      } else {
        lex_operator(depth);
      }
    }
  }

  void lex_number() {
    size_t e = pos_;
    auto digits = [&] {
      while (e < src_.size() && (is_digit(src_[e]) || (src_[e] == '_' && e + 1 < src_.size() && is_digit(src_[e + 1])))) ++e;
    };
    digits();
    bool is_float = false;
    // After a '.', "0.1" is an attribute chain (x.0.1), not a float.
    const bool after_dot = !tokens_.empty() && tokens_.back().type == TokenType::Op && tokens_.back().text == ".";
    if (!after_dot && e + 1 < src_.size() && src_[e] == '.' && is_digit(src_[e + 1])) {
      ++e;
      digits();
      is_float = true;
    }
    if (!after_dot && e < src_.size() && (src_[e] == 'e' || src_[e] == 'E')) {
      size_t k = e + 1;
      if (k < src_.size() && (src_[k] == '+' || src_[k] == '-')) ++k;
      if (k < src_.size() && is_digit(src_[k])) {
        e = k;
        digits();
        is_float = true;
      }
    }
    std::string text;
    for (size_t i = pos_; i < e; ++i)
      if (src_[i] != '_') text += src_[i];
    Token t{is_float ? TokenType::Float : TokenType::Int, text, 0, 0.0, line_};
    if (is_float) {
      t.fval = std::strtod(text.c_str(), nullptr);
    } else {
      auto res = std::from_chars(text.data(), text.data() + text.size(), t.ival);
      if (res.ec != std::errc()) syntax_error("integer literal too large: " + text, line_);
    }
    tokens_.push_back(std::move(t));
    pos_ = e;
  }

  void lex_string(char quote) {
    const int start_line = line_;
    size_t e = pos_ + 1;
    while (e < src_.size() && src_[e] != quote) {
      if (src_[e] == '\\') ++e;
      ++e;
    }
    if (e >= src_.size()) syntax_error("unexpected end of string", start_line);
    Token t{TokenType::String, unescape(std::string_view(src_).substr(pos_ + 1, e - pos_ - 1), start_line), 0, 0.0,
            start_line};
    tokens_.push_back(std::move(t));
    count_lines(pos_, e);
    pos_ = e + 1;
  }

  void lex_operator(std::string& depth) {
    static const char* const kTwo[] = {"//", "**", "==", "!=", ">=", "<="};
    for (const char* op : kTwo) {
      if (src_.compare(pos_, 2, op) == 0) {
        push(TokenType::Op, op);
        pos_ += 2;
        return;
      }
    }
    const char c = src_[pos_];
    static const std::string kOne = "+-/*%~[](){}=.:|,;<>";
    if (kOne.find(c) == std::string::npos) syntax_error(std::string("unexpected char '") + c + "'", line_);
    if (c == '(' || c == '[' || c == '{') depth += c;
    if (c == ')' || c == ']' || c == '}') {
      const char open = c == ')' ? '(' : (c == ']' ? '[' : '{');
      if (depth.empty() || depth.back() != open) syntax_error(std::string("unexpected '") + c + "'", line_);
      depth.pop_back();
    }
    push(TokenType::Op, std::string(1, c));
    ++pos_;
  }

  LexerOptions opt_;
  std::string src_;
  size_t pos_ = 0;
  int line_ = 1;
  bool line_starting_ = true;
  std::vector<Token> tokens_;
};

}  // namespace

std::vector<Token> tokenize(std::string_view source, const LexerOptions& opt) { return Lexer(source, opt).run(); }

}  // namespace oscar::chat
