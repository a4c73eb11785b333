// llama.cpp's flags as FlagSpec tables bound to RunSettings: the common and
// sampling groups every tool shares, the chat-template flags (llama-server's
// example group, also used by oscar-cli), oscar-cli's own, and the OSCAR KV
// flags. oscar-server adds its own group (tools/oscar-server/server_flags.h).
#pragma once

#include <vector>

#include "flag_table.h"
#include "run_settings.h"

namespace oscar::tools {

std::vector<FlagSpec> common_flag_specs(RunSettings& s);
std::vector<FlagSpec> sampling_flag_specs(RunSettings& s);
std::vector<FlagSpec> chat_flag_specs(RunSettings& s);
std::vector<FlagSpec> cli_flag_specs(RunSettings& s);
std::vector<FlagSpec> kv_flag_specs(RunSettings& s);

// Shorthands for writing tables.
FlagSpec flag(FlagGroup g, std::vector<std::string> names, std::string value, std::string env, std::string help,
              std::function<void(const std::string&)> apply);
FlagSpec no_effect(FlagGroup g, std::vector<std::string> names, std::string value, std::string env,
                   std::string reason);
// An on/off pair (--x / --no-x); apply gets true or false.
FlagSpec on_off(FlagGroup g, std::vector<std::string> on, std::vector<std::string> off, std::string env,
                std::string help, std::function<void(bool)> apply);
FlagSpec on_off_no_effect(FlagGroup g, std::vector<std::string> on, std::vector<std::string> off, std::string env,
                          std::string reason);

// Range checks after all flags are in (shared by every tool).
void check_run_settings(RunSettings& s);

}  // namespace oscar::tools
