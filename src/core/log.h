// Logging to stderr. A Logger is a small value created at the edge (a tool's
// main) from its settings and passed to the code that reports progress; there
// is no process-wide log level.
#pragma once

#include <cstdio>
#include <string>

namespace oscar {

enum class LogLevel { Error = 0, Warn = 1, Info = 2, Debug = 3 };

class Logger {
 public:
  explicit Logger(LogLevel level = LogLevel::Info, std::FILE* sink = stderr)
      : level_(level), sink_(sink) {}
  LogLevel level() const { return level_; }
  bool enabled(LogLevel l) const { return (int)l <= (int)level_; }

  void error(const std::string& msg) const { write(LogLevel::Error, msg); }
  void warn(const std::string& msg) const { write(LogLevel::Warn, msg); }
  void info(const std::string& msg) const { write(LogLevel::Info, msg); }
  void debug(const std::string& msg) const { write(LogLevel::Debug, msg); }
  void write(LogLevel l, const std::string& msg) const;

  // A logger that prints nothing (tests, library callers who do not care).
  static Logger quiet() { return Logger(LogLevel::Error, nullptr); }

 private:
  LogLevel level_;
  std::FILE* sink_;
};

}  // namespace oscar
