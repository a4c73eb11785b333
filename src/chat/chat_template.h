// Chat templates as transformers applies them: a Jinja template rendered in
// a sandbox with trim_blocks/lstrip_blocks and loop controls, given
// `messages`, `tools`, `documents`, `add_generation_prompt`, the model's
// special tokens and any extra variables (e.g. enable_thinking).
//
//   ChatTemplate tmpl(source, "<bos>", "<eos>");
//   std::string prompt = tmpl.render({{"messages", msgs}, {"add_generation_prompt", true}});
//
// Rendering is const and keeps no state between calls, so one ChatTemplate
// may be rendered from several threads at once.
#pragma once

#include <ctime>
#include <functional>
#include <memory>
#include <string>

#include <nlohmann/json.hpp>

#include "chat/interpreter.h"
#include "chat/template_error.h"

namespace oscar::chat {

struct ChatTemplateOptions {
  RenderLimits limits;
  // Clock for strftime_now (local broken-down time); empty: system clock.
  std::function<std::tm()> now;
};

// Inputs of transformers' apply_chat_template.
struct ChatInputs {
  nlohmann::ordered_json messages = nlohmann::ordered_json::array();
  nlohmann::ordered_json tools;      // null: no tools (the template sees None)
  nlohmann::ordered_json documents;  // null: no documents
  bool add_generation_prompt = false;
  // Extra template variables (enable_thinking, date_string, ...); an object.
  nlohmann::ordered_json extra = nlohmann::ordered_json::object();
};

class ChatTemplate {
 public:
  // Parses `source`; throws TemplateError (TemplateSyntaxError, with the line)
  // if it is not valid Jinja. Empty bos/eos tokens are left undefined, as
  // transformers leaves tokens a tokenizer does not have.
  ChatTemplate(const std::string& source, std::string bos_token, std::string eos_token,
               ChatTemplateOptions options = {});
  ~ChatTemplate();
  ChatTemplate(ChatTemplate&&) noexcept;
  ChatTemplate& operator=(ChatTemplate&&) noexcept;

  // Renders with the keys of `context` as template variables, on top of the
  // defaults transformers passes (tools=None, documents=None,
  // add_generation_prompt=False, bos_token, eos_token). Object key order is
  // kept (it shows in `tojson` output), which is why this takes ordered_json.
  // Throws TemplateError; its python_style() is what jinja2 would report.
  std::string render(const nlohmann::ordered_json& context) const;
  // nlohmann::json sorts object keys; fine when order does not matter.
  std::string render(const nlohmann::json& context) const;
  std::string apply(const ChatInputs& inputs) const;

  const std::string& bos_token() const { return bos_; }
  const std::string& eos_token() const { return eos_; }

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
  std::string bos_, eos_;
};

}  // namespace oscar::chat
