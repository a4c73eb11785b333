// oscar-server's flags: llama-server's whole table (common, sampling and
// server groups, tools/common/llama_flags.h plus server_flag_specs here), its
// LLAMA_ARG_* variables, and the OSCAR KV flags.
#pragma once

#include <string>

#include "flag_table.h"
#include "run_settings.h"
#include "server/server_settings.h"

namespace oscar::tools {

// Flags outside the table, tried when a flag is not in it. Other work adds
// its flags here with one line each (e.g. --kv-unified); they then also
// belong in server_usage_extra().
class ServerFlags : public ExtraFlags {
 public:
  bool handle(const std::string& flag, const std::function<std::string()>& next) override;
  server::ServerSettings settings;
};

// llama-server's example-specific group, bound to the server and run settings.
std::vector<FlagSpec> server_flag_specs(server::ServerSettings& ss, RunSettings& s);

struct ServerArgs {
  RunSettings run;
  server::ServerSettings server;
};
// Parses oscar-server's command line and LLAMA_ARG_* variables (env: getenv
// when null); throws Error for unknown flags (with a suggestion) and bad values.
ServerArgs parse_server_args(int argc, char** argv, const EnvLookup& env = nullptr);

std::string server_usage();

}  // namespace oscar::tools
