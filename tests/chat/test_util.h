// Helpers shared by the chat tests.
#pragma once

#include <fstream>
#include <sstream>
#include <string>

#include <nlohmann/json.hpp>

#include "chat/chat_template.h"

namespace oscar::chat::testing {

inline std::string read_file(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  std::ostringstream ss;
  ss << f.rdbuf();
  return ss.str();
}

// Renders `source` with transformers' settings; strftime_now is fixed at
// 2026-01-02 03:04:05 like the reference data.
inline std::string render(const std::string& source, const nlohmann::ordered_json& ctx = nlohmann::ordered_json::object(),
                          RenderLimits limits = {}) {
  ChatTemplateOptions opt;
  opt.limits = limits;
  opt.now = [] {
    std::tm tm{};
    tm.tm_year = 2026 - 1900;
    tm.tm_mon = 0;
    tm.tm_mday = 2;
    tm.tm_hour = 3;
    tm.tm_min = 4;
    tm.tm_sec = 5;
    std::mktime(&tm);
    return tm;
  };
  ChatTemplate t(source, "", "", opt);
  return t.render(ctx);
}

}  // namespace oscar::chat::testing
