#include "chat/template_context.h"

#include <string>

namespace oscar::chat {

namespace {

std::string format_local(std::time_t t, const char* fmt) {
  std::tm tm{};
  localtime_r(&t, &tm);
  char buf[64];
  const size_t n = std::strftime(buf, sizeof buf, fmt, &tm);
  return std::string(buf, n);
}

}  // namespace

nlohmann::ordered_json date_variables(std::time_t now) {
  return {{"datetime", format_local(now, "%b %d %Y")}, {"date_string", format_local(now, "%d %b %Y")}};
}

}  // namespace oscar::chat
