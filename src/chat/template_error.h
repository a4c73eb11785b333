// Errors raised while compiling or rendering a Jinja template. They mirror the
// Python exception classes jinja2 would raise (TemplateSyntaxError,
// UndefinedError, TypeError, ...) so a caller can compare our failures with
// what transformers reports, and they carry the template line so a user can
// find the offending statement.
#pragma once

#include <string>

#include "core/error.h"

namespace oscar::chat {

class TemplateError : public oscar::Error {
 public:
  // kind: the Python-style class name ("TypeError", "UndefinedError", ...).
  // line: 1-based template line, 0 when not yet known (filled in by the
  // interpreter as the error travels up through the statement that caused it).
  TemplateError(std::string kind, std::string message, int line = 0)
      : oscar::Error(format(kind, message, line)),
        kind_(std::move(kind)),
        message_(std::move(message)),
        line_(line) {}

  const std::string& kind() const { return kind_; }
  const std::string& message() const { return message_; }
  int line() const { return line_; }
  // "Kind: message", the way Python prints an exception (no line).
  std::string python_style() const { return kind_ + ": " + message_; }
  TemplateError with_line(int line) const { return TemplateError(kind_, message_, line); }

 private:
  static std::string format(const std::string& kind, const std::string& message, int line) {
    std::string s = kind + ": " + message;
    if (line > 0) s += " (template line " + std::to_string(line) + ")";
    return s;
  }
  std::string kind_;
  std::string message_;
  int line_;
};

// Shorthands for the common error classes.
[[noreturn]] inline void throw_type_error(const std::string& msg) { throw TemplateError("TypeError", msg); }
[[noreturn]] inline void throw_value_error(const std::string& msg) { throw TemplateError("ValueError", msg); }
[[noreturn]] inline void throw_undefined_error(const std::string& msg) {
  throw TemplateError("UndefinedError", msg);
}
[[noreturn]] inline void throw_limit_error(const std::string& msg) { throw TemplateError("LimitError", msg); }

}  // namespace oscar::chat
