// oscar-server's own flags (llama-server's names), handled through the
// shared parser's ExtraFlags hook so every oscar-cli flag works too.
#pragma once

#include <string>

#include "run_settings.h"
#include "server/server_settings.h"

namespace oscar::tools {

class ServerFlags : public ExtraFlags {
 public:
  bool handle(const std::string& flag, const std::function<std::string()>& next) override;
  server::ServerSettings settings;
};

std::string server_usage();

}  // namespace oscar::tools
