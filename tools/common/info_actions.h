// The informational flags llama.cpp's tools answer and exit on: --version,
// --license, --list-devices, --cache-list, --completion-bash.
#pragma once

#include <string>

namespace oscar::tools {

// Prints what `action` asks for to stdout; returns the exit status.
// `help` is the tool's --help text (its flags feed the completion script).
int run_info_action(const std::string& action, const std::string& tool, const std::string& help);

}  // namespace oscar::tools
