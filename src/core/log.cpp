#include "core/log.h"

namespace oscar {

void Logger::write(LogLevel l, const std::string& msg) const {
  if (!sink_ || !enabled(l)) return;
  static const char* const kTags[] = {"error", "warn", "info", "debug"};
  std::fprintf(sink_, "%s: %s\n", kTags[(int)l], msg.c_str());
}

}  // namespace oscar
