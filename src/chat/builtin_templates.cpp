#include "chat/builtin_templates.h"

#include <map>

namespace oscar::chat {

namespace {

// Every template below outputs only through {{- -}} expressions and strips
// the whitespace around its tags, so the line breaks here never show.

const char* const kChatml = R"({%- for m in messages -%}
{{- '<|im_start|>' + m.role + '\n' + m.content + '<|im_end|>\n' -}}
{%- endfor -%}
{%- if add_generation_prompt -%}{{- '<|im_start|>assistant\n' -}}{%- endif -%})";

// Llama 2 family; the variables in front pick the variant.
const char* const kLlama2Body = R"({{- '[INST] ' -}}
{%- set ns = namespace(inside=true) -%}
{%- for m in messages -%}
{%- set c = (m.content | trim) if strip_content else m.content -%}
{%- if not ns.inside -%}{{- '<s>[INST] ' if bos_in_history else '[INST] ' -}}{%- set ns.inside = true -%}{%- endif -%}
{%- if m.role == 'system' -%}
{%- if system_tags -%}{{- '<<SYS>>\n' + c + '\n<</SYS>>\n\n' -}}{%- else -%}{{- c + '\n' -}}{%- endif -%}
{%- elif m.role == 'user' -%}{{- c + ' [/INST]' -}}
{%- else -%}{{- c + '</s>' -}}{%- set ns.inside = false -%}
{%- endif -%}
{%- endfor -%})";

const char* const kLlama3 = R"({%- for m in messages -%}
{{- '<|start_header_id|>' + m.role + '<|end_header_id|>\n\n' + (m.content | trim) + '<|eot_id|>' -}}
{%- endfor -%}
{%- if add_generation_prompt -%}{{- '<|start_header_id|>assistant<|end_header_id|>\n\n' -}}{%- endif -%})";

// Gemma has no system turn: system text opens the first user turn.
const char* const kGemma = R"({%- set ns = namespace(system='') -%}
{%- for m in messages -%}
{%- if m.role == 'system' -%}{%- set ns.system = ns.system + (m.content | trim) -%}
{%- else -%}
{%- set role = 'model' if m.role == 'assistant' else m.role -%}
{{- '<start_of_turn>' + role + '\n' -}}
{%- if ns.system and role != 'model' -%}{{- ns.system + '\n\n' -}}{%- set ns.system = '' -%}{%- endif -%}
{{- (m.content | trim) + '<end_of_turn>\n' -}}
{%- endif -%}
{%- endfor -%}
{%- if add_generation_prompt -%}{{- '<start_of_turn>model\n' -}}{%- endif -%})";

// Mistral v7 ("sp" is the space the non-tekken variant puts after each tag).
const char* const kMistralV7Body = R"({%- for m in messages -%}
{%- if m.role == 'system' -%}{{- '[SYSTEM_PROMPT]' + sp + m.content + '[/SYSTEM_PROMPT]' -}}
{%- elif m.role == 'user' -%}{{- '[INST]' + sp + m.content + '[/INST]' -}}
{%- else -%}{{- sp + m.content + '</s>' -}}
{%- endif -%}
{%- endfor -%})";

// Mistral v1 / v3 / v3-tekken: the spaces around [INST] and the trimming of
// answers differ.
const char* const kMistralBody = R"({%- set ns = namespace(inside=false) -%}
{%- for m in messages -%}
{%- if not ns.inside -%}{{- lead + '[INST]' + trail -}}{%- set ns.inside = true -%}{%- endif -%}
{%- if m.role == 'system' -%}{{- m.content + '\n\n' -}}
{%- elif m.role == 'user' -%}{{- m.content + lead + '[/INST]' -}}
{%- else -%}{{- trail + ((m.content | trim) if trim_answers else m.content) + '</s>' -}}{%- set ns.inside = false -%}
{%- endif -%}
{%- endfor -%})";

const char* const kPhi3 = R"({%- for m in messages -%}
{{- '<|' + m.role + '|>\n' + m.content + '<|end|>\n' -}}
{%- endfor -%}
{%- if add_generation_prompt -%}{{- '<|assistant|>\n' -}}{%- endif -%})";

const char* const kPhi4 = R"({%- for m in messages -%}
{{- '<|im_start|>' + m.role + '<|im_sep|>' + m.content + '<|im_end|>' -}}
{%- endfor -%}
{%- if add_generation_prompt -%}{{- '<|im_start|>assistant<|im_sep|>' -}}{%- endif -%})";

const char* const kFalcon3 = R"({%- for m in messages -%}
{{- '<|' + m.role + '|>\n' + m.content + '\n' -}}
{%- endfor -%}
{%- if add_generation_prompt -%}{{- '<|assistant|>\n' -}}{%- endif -%})";

const char* const kZephyr = R"({%- for m in messages -%}
{{- '<|' + m.role + '|>\n' + m.content + '<|endoftext|>\n' -}}
{%- endfor -%}
{%- if add_generation_prompt -%}{{- '<|assistant|>\n' -}}{%- endif -%})";

const char* const kDeepseek = R"({%- for m in messages -%}
{%- if m.role == 'system' -%}{{- m.content -}}
{%- elif m.role == 'user' -%}{{- '### Instruction:\n' + m.content + '\n' -}}
{%- elif m.role == 'assistant' -%}{{- '### Response:\n' + m.content + '\n<|EOT|>\n' -}}
{%- endif -%}
{%- endfor -%}
{%- if add_generation_prompt -%}{{- '### Response:\n' -}}{%- endif -%})";

const char* const kDeepseek2 = R"({%- for m in messages -%}
{%- if m.role == 'system' -%}{{- m.content + '\n\n' -}}
{%- elif m.role == 'user' -%}{{- 'User: ' + m.content + '\n\n' -}}
{%- elif m.role == 'assistant' -%}{{- 'Assistant: ' + m.content + '<｜end▁of▁sentence｜>' -}}
{%- endif -%}
{%- endfor -%}
{%- if add_generation_prompt -%}{{- 'Assistant:' -}}{%- endif -%})";

const char* const kDeepseek3 = R"({%- for m in messages -%}
{%- if m.role == 'system' -%}{{- m.content + '\n\n' -}}
{%- elif m.role == 'user' -%}{{- '<｜User｜>' + m.content -}}
{%- elif m.role == 'assistant' -%}{{- '<｜Assistant｜>' + m.content + '<｜end▁of▁sentence｜>' -}}
{%- endif -%}
{%- endfor -%}
{%- if add_generation_prompt -%}{{- '<｜Assistant｜>' -}}{%- endif -%})";

const char* const kVicunaBody = R"({%- for m in messages -%}
{%- if m.role == 'system' -%}{{- ('SYSTEM: ' + m.content + '\n') if orca else (m.content + '\n\n') -}}
{%- elif m.role == 'user' -%}{{- 'USER: ' + m.content + '\n' -}}
{%- elif m.role == 'assistant' -%}{{- 'ASSISTANT: ' + m.content + '</s>\n' -}}
{%- endif -%}
{%- endfor -%}
{%- if add_generation_prompt -%}{{- 'ASSISTANT:' -}}{%- endif -%})";

const char* const kOpenchat = R"({%- for m in messages -%}
{%- if m.role == 'system' -%}{{- m.content + '<|end_of_turn|>' -}}
{%- else -%}{{- 'GPT4 Correct ' + (m.role | capitalize) + ': ' + m.content + '<|end_of_turn|>' -}}
{%- endif -%}
{%- endfor -%}
{%- if add_generation_prompt -%}{{- 'GPT4 Correct Assistant:' -}}{%- endif -%})";

const char* const kCommandR = R"({%- set tokens = {'system': '<|SYSTEM_TOKEN|>', 'user': '<|USER_TOKEN|>', 'assistant': '<|CHATBOT_TOKEN|>'} -%}
{%- for m in messages -%}
{%- if m.role in tokens -%}{{- '<|START_OF_TURN_TOKEN|>' + tokens[m.role] + (m.content | trim) + '<|END_OF_TURN_TOKEN|>' -}}{%- endif -%}
{%- endfor -%}
{%- if add_generation_prompt -%}{{- '<|START_OF_TURN_TOKEN|><|CHATBOT_TOKEN|>' -}}{%- endif -%})";

// AlphaMonarch: BOS inside the history, not before the first message.
const char* const kMonarch = R"({%- for m in messages -%}
{{- ('' if loop.first else '<s>') + m.role + '\n' + m.content + '</s>\n' -}}
{%- endfor -%}
{%- if add_generation_prompt -%}{{- '<s>assistant\n' -}}{%- endif -%})";

const std::map<std::string, std::string>& table() {
  static const std::map<std::string, std::string> t = [] {
    std::map<std::string, std::string> m;
    auto with = [](const std::string& vars, const char* body) { return vars + body; };
    m["chatml"] = kChatml;
    m["llama2"] = with("{%- set system_tags = false -%}{%- set bos_in_history = false -%}{%- set strip_content = false -%}", kLlama2Body);
    m["llama2-sys"] = with("{%- set system_tags = true -%}{%- set bos_in_history = false -%}{%- set strip_content = false -%}", kLlama2Body);
    m["llama2-sys-bos"] = with("{%- set system_tags = true -%}{%- set bos_in_history = true -%}{%- set strip_content = false -%}", kLlama2Body);
    m["llama2-sys-strip"] = with("{%- set system_tags = true -%}{%- set bos_in_history = false -%}{%- set strip_content = true -%}", kLlama2Body);
    m["llama3"] = kLlama3;
    m["gemma"] = kGemma;
    m["mistral-v7"] = with("{%- set sp = ' ' -%}", kMistralV7Body);
    m["mistral-v7-tekken"] = with("{%- set sp = '' -%}", kMistralV7Body);
    m["mistral-v1"] = with("{%- set lead = ' ' -%}{%- set trail = ' ' -%}{%- set trim_answers = false -%}", kMistralBody);
    m["mistral-v3"] = with("{%- set lead = '' -%}{%- set trail = ' ' -%}{%- set trim_answers = true -%}", kMistralBody);
    m["mistral-v3-tekken"] = with("{%- set lead = '' -%}{%- set trail = '' -%}{%- set trim_answers = false -%}", kMistralBody);
    m["phi3"] = kPhi3;
    m["phi4"] = kPhi4;
    m["falcon3"] = kFalcon3;
    m["zephyr"] = kZephyr;
    m["deepseek"] = kDeepseek;
    m["deepseek2"] = kDeepseek2;
    m["deepseek3"] = kDeepseek3;
    m["vicuna"] = with("{%- set orca = false -%}", kVicunaBody);
    m["vicuna-orca"] = with("{%- set orca = true -%}", kVicunaBody);
    m["openchat"] = kOpenchat;
    m["command-r"] = kCommandR;
    m["monarch"] = kMonarch;
    return m;
  }();
  return t;
}

bool has(const std::string& s, const char* needle) { return s.find(needle) != std::string::npos; }

}  // namespace

const std::string* builtin_template(const std::string& name) {
  const auto it = table().find(name);
  return it == table().end() ? nullptr : &it->second;
}

std::vector<std::string> builtin_template_names() {
  std::vector<std::string> out;
  for (const auto& [name, _] : table()) out.push_back(name);
  return out;
}

std::string detect_builtin_template(const std::string& src) {
  // Most specific markers first (phi4 also uses <|im_start|>).
  if (has(src, "<|im_sep|>")) return "phi4";
  if (has(src, "<|im_start|>")) return "chatml";
  if (has(src, "<|start_header_id|>")) return "llama3";
  if (has(src, "<start_of_turn>")) return "gemma";
  if (has(src, "[SYSTEM_PROMPT]")) return "mistral-v7";
  if (has(src, "<｜Assistant｜>")) return "deepseek3";
  if (has(src, "<|START_OF_TURN_TOKEN|>")) return "command-r";
  if (has(src, "GPT4 Correct ")) return "openchat";
  if (has(src, "<|end|>") && has(src, "<|assistant|>")) return "phi3";
  if (has(src, "<|endoftext|>") && has(src, "<|assistant|>")) return "zephyr";
  if (has(src, "### Instruction:")) return "deepseek";
  if (has(src, "USER: ") && has(src, "ASSISTANT:")) return "vicuna";
  if (has(src, "[INST]")) return has(src, "<<SYS>>") ? "llama2-sys" : "mistral-v3";
  return "";
}

}  // namespace oscar::chat
