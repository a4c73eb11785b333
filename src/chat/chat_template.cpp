#include "chat/chat_template.h"

#include "chat/builtins.h"
#include "chat/json_io.h"
#include "chat/parser.h"

namespace oscar::chat {

struct ChatTemplate::Impl {
  ast::Template tmpl;
  ChatTemplateOptions options;
};

ChatTemplate::ChatTemplate(const std::string& source, std::string bos_token, std::string eos_token,
                           ChatTemplateOptions options)
    : impl_(std::make_unique<Impl>()), bos_(std::move(bos_token)), eos_(std::move(eos_token)) {
  ParserOptions popt;  // trim_blocks + lstrip_blocks, like transformers
  impl_->tmpl = parse_template(source, popt);
  impl_->options = std::move(options);
}

ChatTemplate::~ChatTemplate() = default;
ChatTemplate::ChatTemplate(ChatTemplate&&) noexcept = default;
ChatTemplate& ChatTemplate::operator=(ChatTemplate&&) noexcept = default;

std::string ChatTemplate::render(const nlohmann::ordered_json& context) const {
  if (!context.is_object()) throw TemplateError("TypeError", "template context must be a JSON object");
  auto globals = std::make_shared<Scope>();
  builtins::GlobalsConfig cfg;
  cfg.now = impl_->options.now;
  builtins::install_globals(*globals, cfg);
  globals->vars["tools"] = Value::none();
  globals->vars["documents"] = Value::none();
  globals->vars["add_generation_prompt"] = Value(false);
  if (!bos_.empty()) globals->vars["bos_token"] = Value(bos_);
  if (!eos_.empty()) globals->vars["eos_token"] = Value(eos_);
  for (auto it = context.begin(); it != context.end(); ++it) globals->vars[it.key()] = value_from_json(it.value());
  Interpreter interp(impl_->options.limits);
  try {
    return interp.render(impl_->tmpl, globals);
  } catch (const TemplateError&) {
    throw;
  } catch (const std::bad_alloc&) {
    throw TemplateError("MemoryError", "out of memory while rendering the template");
  } catch (const std::exception& e) {
    // Not expected: a bug in the engine. Report it as a template error so a
    // server keeps running; the fuzz target treats this kind as a crash.
    throw TemplateError("InternalError", e.what());
  }
}

std::string ChatTemplate::render(const nlohmann::json& context) const {
  return render(nlohmann::ordered_json::parse(context.dump()));
}

std::string ChatTemplate::apply(const ChatInputs& in) const {
  nlohmann::ordered_json ctx = nlohmann::ordered_json::object();
  if (in.extra.is_object())
    for (auto it = in.extra.begin(); it != in.extra.end(); ++it) ctx[it.key()] = it.value();
  ctx["messages"] = in.messages;
  ctx["tools"] = in.tools;
  ctx["documents"] = in.documents;
  ctx["add_generation_prompt"] = in.add_generation_prompt;
  return render(ctx);
}

}  // namespace oscar::chat
