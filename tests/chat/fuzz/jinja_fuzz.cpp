// libFuzzer target for the Jinja engine: parses arbitrary template source
// and, if it parses, renders it with small limits against a fixed context.
// Any TemplateError is an acceptable outcome; crashes, hangs, sanitizer
// reports and other exceptions are bugs.
#include <cstddef>
#include <cstdint>
#include <string>

#include "chat/chat_template.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using oscar::chat::ChatTemplate;
  using oscar::chat::ChatTemplateOptions;
  using oscar::chat::TemplateError;
  static const nlohmann::ordered_json kContext = nlohmann::ordered_json::parse(R"({
    "messages": [{"role": "system", "content": "sys"}, {"role": "user", "content": "hi <think>"},
                 {"role": "assistant", "content": "<think>r</think>ok", "tool_calls": [
                   {"type": "function", "function": {"name": "f", "arguments": {"a": [1, 2.5, null, true]}}}]}],
    "tools": [{"type": "function", "function": {"name": "f", "parameters": {"type": "object"}}}],
    "add_generation_prompt": true, "enable_thinking": false})");
  const std::string src(reinterpret_cast<const char*>(data), size);
  try {
    ChatTemplateOptions opt;
    opt.limits.max_iterations = 20000;
    opt.limits.max_output_bytes = 1 << 16;
    opt.limits.max_call_depth = 20;
    opt.now = [] { return std::tm{}; };
    ChatTemplate t(src, "<s>", "</s>", opt);
    (void)t.render(kContext);
  } catch (const TemplateError& e) {
    // InternalError means a C++ exception escaped the engine: a bug.
    if (e.kind() == "InternalError") __builtin_trap();
  }
  return 0;
}
