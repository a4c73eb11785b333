#include "server/anthropic_request.h"

#include <set>
#include <string>

#include "server/api_error.h"

namespace oscar::server {

namespace {

bool present(const Json& body, const char* key) { return body.contains(key) && !body[key].is_null(); }

std::string block_type(const Json& block, const std::string& where) {
  if (!block.is_object() || !block.contains("type") || !block["type"].is_string())
    throw bad_request("'" + where + "' must be an object with a string 'type'");
  return block["type"].get<std::string>();
}

std::string required_string(const Json& obj, const char* key, const std::string& where) {
  if (!obj.contains(key) || !obj[key].is_string())
    throw bad_request("'" + where + "." + key + "' must be a string");
  return obj[key].get<std::string>();
}

[[noreturn]] void no_media(const std::string& type, const std::string& where) {
  throw bad_request("'" + where + "': " + type +
                    " blocks are not supported (this server runs text-only models, no vision or documents)");
}

// Text blocks joined the way chat content parts are; anything else is refused.
std::string text_blocks(const Json& content, const std::string& where) {
  if (content.is_string()) return content.get<std::string>();
  if (!content.is_array()) throw bad_request("'" + where + "' must be a string or an array of text blocks");
  std::string text;
  for (size_t i = 0; i < content.size(); ++i) {
    const std::string at = where + "[" + std::to_string(i) + "]";
    const std::string type = block_type(content[i], at);
    if (type == "image" || type == "document") no_media(type, at);
    if (type != "text") throw bad_request("'" + at + "': expected a text block, got '" + type + "'");
    if (!text.empty()) text += "\n";
    text += required_string(content[i], "text", at);
  }
  return text;
}

struct Converted {
  Json messages = Json::array();
  std::set<std::string> tool_use_ids;  // every tool_use id the assistant turns so far made
};

void convert_assistant(const Json& content, const std::string& at, Converted& c) {
  Json msg = {{"role", "assistant"}};
  if (content.is_string()) {
    msg["content"] = content;
    c.messages.push_back(msg);
    return;
  }
  std::string text, thinking;
  Json calls = Json::array();
  for (size_t i = 0; i < content.size(); ++i) {
    const std::string where = at + ".content[" + std::to_string(i) + "]";
    const Json& b = content[i];
    const std::string type = block_type(b, where);
    if (type == "text") {
      if (!text.empty()) text += "\n";
      text += required_string(b, "text", where);
    } else if (type == "thinking") {
      thinking += required_string(b, "thinking", where);
    } else if (type == "redacted_thinking") {
      // Encrypted reasoning of another provider: nothing a template can show.
    } else if (type == "tool_use") {
      const std::string id = required_string(b, "id", where);
      const std::string name = required_string(b, "name", where);
      const Json input = b.value("input", Json::object());
      if (!input.is_object()) throw bad_request("'" + where + ".input' must be an object");
      if (!c.tool_use_ids.insert(id).second) throw bad_request("'" + where + ".id': tool_use id '" + id + "' is used twice");
      calls.push_back({{"id", id}, {"type", "function"}, {"function", {{"name", name}, {"arguments", input}}}});
    } else if (type == "image" || type == "document") {
      no_media(type, where);
    } else {
      throw bad_request("'" + where + "': block type '" + type + "' is not valid in an assistant message");
    }
  }
  msg["content"] = text;
  if (!thinking.empty()) msg["reasoning_content"] = thinking;
  if (!calls.empty()) msg["tool_calls"] = calls;
  c.messages.push_back(msg);
}

void convert_user(const Json& content, const std::string& at, Converted& c) {
  if (content.is_string()) {
    c.messages.push_back({{"role", "user"}, {"content", content}});
    return;
  }
  std::string text;
  bool has_text = false;
  for (size_t i = 0; i < content.size(); ++i) {
    const std::string where = at + ".content[" + std::to_string(i) + "]";
    const Json& b = content[i];
    const std::string type = block_type(b, where);
    if (type == "text") {
      if (has_text) text += "\n";
      text += required_string(b, "text", where);
      has_text = true;
    } else if (type == "tool_result") {
      const std::string id = required_string(b, "tool_use_id", where);
      if (!c.tool_use_ids.count(id))
        throw bad_request("'" + where + ".tool_use_id': no earlier tool_use block has the id '" + id + "'");
      std::string result = present(b, "content") ? text_blocks(b["content"], where + ".content") : "";
      if (present(b, "is_error")) {
        if (!b["is_error"].is_boolean()) throw bad_request("'" + where + ".is_error' must be a boolean");
        // Templates have no field for a failed call; the model reads it in the text.
        if (b["is_error"].get<bool>()) result = "Error: " + result;
      }
      c.messages.push_back({{"role", "tool"}, {"tool_call_id", id}, {"content", result}});
    } else if (type == "image" || type == "document") {
      no_media(type, where);
    } else {
      throw bad_request("'" + where + "': block type '" + type + "' is not valid in a user message");
    }
  }
  if (has_text || c.messages.empty() || c.messages.back()["role"] != "tool")
    c.messages.push_back({{"role", "user"}, {"content", text}});
}

Json convert_tools(const Json& tools) {
  if (!tools.is_array()) throw bad_request("'tools' must be an array");
  Json out = Json::array();
  for (size_t i = 0; i < tools.size(); ++i) {
    const std::string at = "tools[" + std::to_string(i) + "]";
    const Json& t = tools[i];
    if (!t.is_object()) throw bad_request("'" + at + "' must be an object");
    if (present(t, "type") && t["type"] != "custom")
      throw bad_request("'" + at + "': server tools ('" + t["type"].dump() + "') are not supported; give custom tools "
                        "with name and input_schema");
    Json fn = {{"name", required_string(t, "name", at)}};
    if (present(t, "description")) fn["description"] = required_string(t, "description", at);
    if (!t.contains("input_schema") || !t["input_schema"].is_object())
      throw bad_request("'" + at + ".input_schema' must be an object (a JSON schema)");
    fn["parameters"] = t["input_schema"];
    out.push_back({{"type", "function"}, {"function", fn}});
  }
  return out;
}

// auto / any / tool / none -> the chat API's auto / required / required / none.
Json convert_tool_choice(const Json& tc) {
  if (!tc.is_object()) throw bad_request("'tool_choice' must be an object with a 'type'");
  const std::string type = block_type(tc, "tool_choice");
  if (type == "auto") return "auto";
  if (type == "any") return "required";
  if (type == "none") return "none";
  if (type == "tool") {
    required_string(tc, "name", "tool_choice");
    return "required";
  }
  throw bad_request("'tool_choice.type' must be auto, any, tool or none");
}

void convert_sampling(const Json& body, Json& out) {
  if (!present(body, "max_tokens")) throw bad_request("'max_tokens' is required");
  const Json& mt = body["max_tokens"];
  if (!mt.is_number_integer() || mt.get<long long>() < 1) throw bad_request("'max_tokens' must be an integer >= 1");
  out["max_tokens"] = mt;
  for (const char* k : {"temperature", "top_p", "top_k"})
    if (present(body, k)) out[k] = body[k];
  if (present(body, "stop_sequences")) {
    const Json& s = body["stop_sequences"];
    if (!s.is_array()) throw bad_request("'stop_sequences' must be an array of strings");
    if (s.size() > 16) throw bad_request("'stop_sequences' may hold at most 16 strings");
    for (const auto& x : s)
      if (!x.is_string() || x.get<std::string>().empty())
        throw bad_request("'stop_sequences' must hold non-empty strings");
    out["stop"] = s;
  }
  if (present(body, "metadata")) {
    const Json& m = body["metadata"];
    if (!m.is_object()) throw bad_request("'metadata' must be an object");
    if (present(m, "user_id") && !m["user_id"].is_string()) throw bad_request("'metadata.user_id' must be a string");
  }
}

}  // namespace

Json anthropic_to_chat_body(const Json& body, bool count_only) {
  Converted c;
  if (present(body, "model") && !body["model"].is_string()) throw bad_request("'model' must be a string");
  if (present(body, "system")) {
    const std::string system = text_blocks(body["system"], "system");
    c.messages.push_back({{"role", "system"}, {"content", system}});
  }
  if (!present(body, "messages") || !body["messages"].is_array()) throw bad_request("'messages' must be an array");
  const Json& messages = body["messages"];
  if (messages.empty()) throw bad_request("'messages' must not be empty");
  for (size_t i = 0; i < messages.size(); ++i) {
    const std::string at = "messages[" + std::to_string(i) + "]";
    const Json& m = messages[i];
    if (!m.is_object()) throw bad_request("'" + at + "' must be an object");
    const std::string role = required_string(m, "role", at);
    if (!m.contains("content") || (!m["content"].is_string() && !m["content"].is_array()))
      throw bad_request("'" + at + ".content' must be a string or an array of content blocks");
    if (role == "user") convert_user(m["content"], at, c);
    else if (role == "assistant") convert_assistant(m["content"], at, c);
    else throw bad_request("'" + at + ".role' must be user or assistant, got '" + role + "' (use 'system' for "
                           "the system prompt)");
  }

  Json out = {{"messages", c.messages}};
  if (present(body, "tools")) out["tools"] = convert_tools(body["tools"]);
  if (present(body, "tool_choice")) out["tool_choice"] = convert_tool_choice(body["tool_choice"]);
  if (present(body, "thinking")) {
    const Json& t = body["thinking"];
    const std::string type = block_type(t, "thinking");
    if (type != "enabled" && type != "disabled") throw bad_request("'thinking.type' must be enabled or disabled");
    if (type == "enabled" && present(t, "budget_tokens") && !t["budget_tokens"].is_number_integer())
      throw bad_request("'thinking.budget_tokens' must be an integer");
    // Reasoning templates (Qwen3 and kin) switch thinking with this variable.
    out["chat_template_kwargs"] = {{"enable_thinking", type == "enabled"}};
  }
  if (!count_only) {
    convert_sampling(body, out);
    if (present(body, "stream")) out["stream"] = body["stream"];
  }
  return out;
}

AnthropicRequest parse_anthropic_request(const Json& body, const GenParams& defaults, uint64_t seed_if_unset,
                                         bool count_only) {
  AnthropicRequest r;
  const Json chat = anthropic_to_chat_body(body, count_only);
  r.chat = parse_chat_request(chat);
  if (!count_only) {
    r.params = parse_gen_params(chat, defaults, Api::Chat, seed_if_unset);
    r.stream = get_bool(chat, "stream", false);
  }
  return r;
}

}  // namespace oscar::server
