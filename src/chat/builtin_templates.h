// llama-server's built-in chat templates by name (--chat-template chatml,
// llama3, gemma, ...), written here as Jinja so one renderer serves them and
// the models' own templates alike. They lay messages out as llama.cpp's
// built-in formats do (no BOS: the tokenizer adds it).
#pragma once

#include <string>
#include <vector>

namespace oscar::chat {

// The Jinja source of a built-in template; nullptr when `name` is not one.
const std::string* builtin_template(const std::string& name);

// The names, in alphabetical order.
std::vector<std::string> builtin_template_names();

// The built-in template a model's Jinja template matches, by the special
// markers it uses (as llama.cpp guesses when Jinja is off); "" when none does.
std::string detect_builtin_template(const std::string& source);

}  // namespace oscar::chat
