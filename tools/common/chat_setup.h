// Which chat template a tool renders with, and the template variables every
// chat request starts from, as llama-server decides them from its flags:
//   --chat-template NAME|TEXT, --chat-template-file, --jinja/--no-jinja,
//   --chat-template-kwargs, --reasoning on|off|auto, --reasoning-budget.
#pragma once

#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "run_settings.h"

namespace oscar::tools {

struct ChosenTemplate {
  std::string source;  // Jinja text to render
  std::string origin;  // "built-in NAME", "--chat-template-file PATH", "the model's", ...
};

// Picks the template: --chat-template-file, then --chat-template (a built-in
// name, or Jinja text when Jinja is on), then the model's own (with
// --no-jinja: the built-in it resembles), then chatml. Throws Error for an
// unknown name, for Jinja text under --no-jinja, and for an unreadable file.
// `notes` gets one line when a fallback was taken.
ChosenTemplate choose_chat_template(const RunSettings& s, const std::string& model_template,
                                    std::vector<std::string>& notes);

// Refuses a --chat-template that is neither a built-in name nor Jinja text
// (or Jinja text under --no-jinja) before anything is loaded.
void check_chat_template_flag(const RunSettings& s);

// The default template variables of chat requests: --chat-template-kwargs,
// plus enable_thinking=false when --reasoning off or --reasoning-budget 0
// (and true with --reasoning on). Requests' own chat_template_kwargs go on top.
nlohmann::ordered_json default_template_kwargs(const RunSettings& s);

// "chatml, command-r, ..." for --help.
std::string builtin_template_names_help();

}  // namespace oscar::tools
