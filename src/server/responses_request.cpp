#include "server/responses_request.h"

#include <set>
#include <string>

#include "server/api_error.h"

namespace oscar::server {

namespace {

bool present(const Json& body, const char* key) { return body.contains(key) && !body[key].is_null(); }

std::string required_string(const Json& obj, const char* key, const std::string& where) {
  if (!obj.contains(key) || !obj[key].is_string()) throw bad_request("'" + where + "." + key + "' must be a string");
  return obj[key].get<std::string>();
}

// A message's content: a string, or parts of the given text types.
std::string part_text(const Json& content, const std::string& where) {
  if (content.is_string()) return content.get<std::string>();
  if (!content.is_array()) throw bad_request("'" + where + "' must be a string or an array of content parts");
  std::string text;
  for (size_t i = 0; i < content.size(); ++i) {
    const std::string at = where + "[" + std::to_string(i) + "]";
    const Json& p = content[i];
    if (!p.is_object() || !p.contains("type") || !p["type"].is_string())
      throw bad_request("'" + at + "' must be an object with a string 'type'");
    const std::string type = p["type"].get<std::string>();
    if (type == "input_image" || type == "input_file" || type == "input_audio")
      throw bad_request("'" + at + "': " + type + " parts are not supported (this server runs text-only models)");
    if (type != "input_text" && type != "output_text" && type != "text" && type != "refusal")
      throw bad_request("'" + at + "': content part type '" + type + "' is not supported");
    if (!text.empty()) text += "\n";
    text += required_string(p, type == "refusal" ? "refusal" : "text", at);
  }
  return text;
}

struct Converter {
  Json messages = Json::array();
  std::set<std::string> call_ids;  // function_call items seen so far
  std::string pending_reasoning;   // a reasoning item waits for the assistant turn it belongs to

  Json& assistant_turn() {
    // Consecutive assistant output (text, calls) is one chat turn.
    if (messages.empty() || messages.back()["role"] != "assistant") {
      messages.push_back({{"role", "assistant"}, {"content", ""}});
    }
    Json& m = messages.back();
    if (!pending_reasoning.empty()) {
      m["reasoning_content"] = m.value("reasoning_content", std::string()) + pending_reasoning;
      pending_reasoning.clear();
    }
    return m;
  }

  void message(const Json& item, const std::string& at) {
    const std::string role = required_string(item, "role", at);
    if (!item.contains("content")) throw bad_request("'" + at + ".content' is missing");
    const std::string text = part_text(item["content"], at + ".content");
    if (role == "assistant") {
      Json& m = assistant_turn();
      const std::string before = m["content"].get<std::string>();
      m["content"] = before.empty() ? text : before + "\n" + text;
    } else if (role == "user" || role == "system" || role == "developer") {
      messages.push_back({{"role", role == "developer" ? "system" : role}, {"content", text}});
    } else {
      throw bad_request("'" + at + ".role' must be user, assistant, system or developer, got '" + role + "'");
    }
  }

  void function_call(const Json& item, const std::string& at) {
    const std::string call_id = required_string(item, "call_id", at);
    const std::string name = required_string(item, "name", at);
    const std::string args = required_string(item, "arguments", at);
    Json parsed = Json::parse(args, nullptr, false);
    if (parsed.is_discarded() || !parsed.is_object())
      throw bad_request("'" + at + ".arguments' must be a JSON object in a string");
    if (!call_ids.insert(call_id).second) throw bad_request("'" + at + ".call_id' '" + call_id + "' is used twice");
    Json& m = assistant_turn();
    if (!m.contains("tool_calls")) m["tool_calls"] = Json::array();
    m["tool_calls"].push_back({{"id", call_id}, {"type", "function"}, {"function", {{"name", name}, {"arguments", parsed}}}});
  }

  void function_output(const Json& item, const std::string& at) {
    const std::string call_id = required_string(item, "call_id", at);
    if (!call_ids.count(call_id))
      throw bad_request("'" + at + ".call_id': no earlier function_call item has the call_id '" + call_id + "'");
    if (!item.contains("output")) throw bad_request("'" + at + ".output' is missing");
    messages.push_back({{"role", "tool"}, {"tool_call_id", call_id}, {"content", part_text(item["output"], at + ".output")}});
  }

  void reasoning(const Json& item, const std::string& at) {
    // The full text (content) when the client kept it, else the summary.
    for (const char* key : {"content", "summary"}) {
      if (!present(item, key)) continue;
      if (!item[key].is_array()) throw bad_request("'" + at + "." + key + "' must be an array");
      std::string text;
      for (const auto& p : item[key]) {
        if (!p.is_object()) throw bad_request("'" + at + "." + key + "' entries must be objects");
        text += required_string(p, "text", at + "." + key + "[]");
      }
      if (!text.empty()) {
        pending_reasoning += text;
        return;
      }
    }
  }

  void item(const Json& it, size_t i) {
    const std::string at = "input[" + std::to_string(i) + "]";
    if (!it.is_object()) throw bad_request("'" + at + "' must be an object");
    // Messages may come without a type (the "easy" input message form).
    const std::string type = present(it, "type") ? required_string(it, "type", at) : "message";
    if (type == "message") message(it, at);
    else if (type == "function_call") function_call(it, at);
    else if (type == "function_call_output") function_output(it, at);
    else if (type == "reasoning") reasoning(it, at);
    else if (type == "item_reference")
      throw bad_request("'" + at + "': item_reference needs stored responses; this server is stateless");
    else throw bad_request("'" + at + "': input item type '" + type + "' is not supported");
  }
};

Json convert_tools(const Json& tools) {
  if (!tools.is_array()) throw bad_request("'tools' must be an array");
  Json out = Json::array();
  for (size_t i = 0; i < tools.size(); ++i) {
    const std::string at = "tools[" + std::to_string(i) + "]";
    const Json& t = tools[i];
    if (!t.is_object()) throw bad_request("'" + at + "' must be an object");
    const std::string type = required_string(t, "type", at);
    if (type != "function")
      throw bad_request("'" + at + "': tool type '" + type + "' is not supported (function tools only)");
    Json fn = {{"name", required_string(t, "name", at)}};
    if (present(t, "description")) fn["description"] = required_string(t, "description", at);
    if (present(t, "parameters")) {
      if (!t["parameters"].is_object()) throw bad_request("'" + at + ".parameters' must be an object (a JSON schema)");
      fn["parameters"] = t["parameters"];
    }
    out.push_back({{"type", "function"}, {"function", fn}});
  }
  return out;
}

Json convert_tool_choice(const Json& tc) {
  if (tc.is_string()) return tc;  // auto / none / required, checked by the chat parser
  if (tc.is_object() && tc.value("type", "") == "function") {
    required_string(tc, "name", "tool_choice");
    return "required";
  }
  throw bad_request("'tool_choice' must be auto, none, required or {\"type\": \"function\", \"name\": ...}");
}

}  // namespace

Json responses_to_chat_body(const Json& body) {
  if (present(body, "previous_response_id"))
    throw bad_request("'previous_response_id' is not supported: this server stores no responses; send the whole "
                      "conversation in 'input'");
  if (present(body, "conversation"))
    throw bad_request("'conversation' is not supported: this server stores no conversations");
  if (present(body, "model") && !body["model"].is_string()) throw bad_request("'model' must be a string");
  Converter c;
  if (present(body, "instructions")) {
    if (!body["instructions"].is_string()) throw bad_request("'instructions' must be a string");
    c.messages.push_back({{"role", "system"}, {"content", body["instructions"]}});
  }
  if (!present(body, "input")) throw bad_request("'input' is required");
  const Json& input = body["input"];
  if (input.is_string()) {
    c.messages.push_back({{"role", "user"}, {"content", input}});
  } else if (input.is_array()) {
    for (size_t i = 0; i < input.size(); ++i) c.item(input[i], i);
  } else {
    throw bad_request("'input' must be a string or an array of input items");
  }
  if (c.messages.empty()) throw bad_request("'input' holds no messages");

  Json out = {{"messages", c.messages}};
  if (present(body, "tools")) out["tools"] = convert_tools(body["tools"]);
  if (present(body, "tool_choice")) out["tool_choice"] = convert_tool_choice(body["tool_choice"]);
  if (present(body, "max_output_tokens")) {
    const Json& m = body["max_output_tokens"];
    if (!m.is_number_integer() || m.get<long long>() < 1) throw bad_request("'max_output_tokens' must be an integer >= 1");
    out["max_tokens"] = m;
  }
  for (const char* k : {"temperature", "top_p", "seed", "stream"})
    if (present(body, k)) out[k] = body[k];
  for (const char* k : {"store", "parallel_tool_calls", "background"})
    if (present(body, k) && !body[k].is_boolean()) throw bad_request(std::string("'") + k + "' must be a boolean");
  if (present(body, "background") && body["background"].get<bool>())
    throw bad_request("'background' is not supported: this server stores no responses");
  if (present(body, "metadata") && !body["metadata"].is_object()) throw bad_request("'metadata' must be an object");
  return out;
}

ResponsesRequest parse_responses_request(const Json& body, const GenParams& defaults, uint64_t seed_if_unset) {
  ResponsesRequest r;
  const Json chat = responses_to_chat_body(body);
  r.chat = parse_chat_request(chat);
  r.params = parse_gen_params(chat, defaults, Api::Chat, seed_if_unset);
  r.stream = get_bool(chat, "stream", false);
  for (const char* k : {"instructions", "tools", "tool_choice", "temperature", "top_p", "max_output_tokens", "metadata"})
    r.echo[k] = body.contains(k) ? body[k] : Json(nullptr);
  if (r.echo["tools"].is_null()) r.echo["tools"] = Json::array();
  if (r.echo["tool_choice"].is_null()) r.echo["tool_choice"] = "auto";
  if (r.echo["metadata"].is_null()) r.echo["metadata"] = Json::object();
  return r;
}

}  // namespace oscar::server
