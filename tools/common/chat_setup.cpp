#include "chat_setup.h"

#include <fstream>
#include <sstream>

#include "chat/builtin_templates.h"
#include "core/error.h"

namespace oscar::tools {

namespace {

bool looks_like_jinja(const std::string& s) {
  return s.find("{%") != std::string::npos || s.find("{{") != std::string::npos;
}

std::string unknown_name_message(const std::string& name) {
  return "--chat-template: '" + name + "' is neither a built-in template name nor Jinja text; built-in names: " +
         builtin_template_names_help();
}

}  // namespace

std::string builtin_template_names_help() {
  std::string out;
  for (const auto& n : chat::builtin_template_names()) out += (out.empty() ? "" : ", ") + n;
  return out;
}

void check_chat_template_flag(const RunSettings& s) {
  if (s.chat_template.empty() || chat::builtin_template(s.chat_template)) return;
  if (!looks_like_jinja(s.chat_template)) throw Error(unknown_name_message(s.chat_template));
  if (!s.jinja)
    throw Error("--chat-template: with --no-jinja only built-in template names are accepted (" +
                builtin_template_names_help() + ")");
}

ChosenTemplate choose_chat_template(const RunSettings& s, const std::string& model_template,
                                    std::vector<std::string>& notes) {
  if (!s.chat_template_file.empty()) {
    std::ifstream f(s.chat_template_file, std::ios::binary);
    if (!f) throw Error("--chat-template-file: cannot read '" + s.chat_template_file + "'");
    std::stringstream ss;
    ss << f.rdbuf();
    if (!s.jinja && !chat::builtin_template(ss.str()))
      throw Error("--chat-template-file needs Jinja (drop --no-jinja), or name a built-in template with --chat-template");
    return {ss.str(), "--chat-template-file " + s.chat_template_file};
  }
  if (!s.chat_template.empty()) {
    if (const std::string* b = chat::builtin_template(s.chat_template)) return {*b, "built-in " + s.chat_template};
    check_chat_template_flag(s);
    return {s.chat_template, "--chat-template"};
  }
  if (!model_template.empty()) {
    if (s.jinja) return {model_template, "the model's"};
    const std::string name = chat::detect_builtin_template(model_template);
    if (!name.empty()) return {*chat::builtin_template(name), "built-in " + name + " (matches the model's; --no-jinja)"};
    notes.push_back("--no-jinja: the model's template matches no built-in template; using chatml");
    return {*chat::builtin_template("chatml"), "built-in chatml"};
  }
  notes.push_back("the model has no chat template: chat requests use chatml");
  return {*chat::builtin_template("chatml"), "built-in chatml"};
}

nlohmann::ordered_json default_template_kwargs(const RunSettings& s) {
  nlohmann::ordered_json kw = nlohmann::ordered_json::object();
  if (!s.chat_template_kwargs.empty()) kw = nlohmann::ordered_json::parse(s.chat_template_kwargs);
  // --reasoning and a zero budget decide enable_thinking unless the kwargs set it.
  // --reasoning and a zero budget decide enable_thinking unless the kwargs set it.
  // (llama-server also passes enable_thinking=true by default; here the template's
  // own default stands, which the existing thinking-template tests rely on.)
  if (!kw.contains("enable_thinking")) {
    if (s.reasoning == "off" || s.reasoning_budget == 0) kw["enable_thinking"] = false;
    else if (s.reasoning == "on") kw["enable_thinking"] = true;
  }
  return kw;
}

}  // namespace oscar::tools
