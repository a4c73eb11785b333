#include "server/request_parse.h"

#include <cmath>
#include <limits>

#include "server/api_error.h"
#include "server/request_json.h"

namespace oscar::server {

namespace {

const Json* field(const Json& body, const char* key) {
  auto it = body.find(key);
  if (it == body.end() || it->is_null()) return nullptr;
  return &*it;
}

double get_number(const Json& body, const char* key, double def, double lo, double hi) {
  const Json* v = field(body, key);
  if (!v) return def;
  if (!v->is_number()) throw bad_request(std::string("'") + key + "' must be a number");
  const double x = v->get<double>();
  if (!std::isfinite(x) || x < lo || x > hi)
    throw bad_request(std::string("'") + key + "' must be between " + std::to_string(lo) + " and " +
                      std::to_string(hi) + ", got " + v->dump());
  return x;
}

long long get_int(const Json& body, const char* key, long long def, long long lo, long long hi) {
  const Json* v = field(body, key);
  if (!v) return def;
  bool integral = v->is_number_integer();
  if (v->is_number_float()) {
    const double d = v->get<double>();
    integral = std::isfinite(d) && d == std::floor(d) && std::fabs(d) < 9e15;
  }
  if (!integral) throw bad_request(std::string("'") + key + "' must be an integer");
  long long x;
  if (v->is_number_unsigned()) {
    const auto u = v->get<unsigned long long>();
    x = u > (unsigned long long)std::numeric_limits<long long>::max() ? std::numeric_limits<long long>::max()
                                                                       : (long long)u;
  } else if (v->is_number_integer()) {
    x = v->get<long long>();
  } else {
    x = (long long)v->get<double>();
  }
  if (x < lo || x > hi)
    throw bad_request(std::string("'") + key + "' must be between " + std::to_string(lo) + " and " +
                      std::to_string(hi) + ", got " + std::to_string(x));
  return x;
}

std::vector<std::string> get_stop(const Json& body) {
  std::vector<std::string> out;
  const Json* v = field(body, "stop");
  if (!v) return out;
  if (v->is_string()) {
    out.push_back(v->get<std::string>());
  } else if (v->is_array()) {
    if (v->size() > 16) throw bad_request("'stop' may hold at most 16 strings");
    for (const auto& s : *v) {
      if (!s.is_string()) throw bad_request("'stop' must be a string or an array of strings");
      out.push_back(s.get<std::string>());
    }
  } else {
    throw bad_request("'stop' must be a string or an array of strings");
  }
  return out;
}

std::string text_of_content(const Json& content, size_t index) {
  const std::string where = "messages[" + std::to_string(index) + "].content";
  if (content.is_null()) return "";
  if (content.is_string()) return content.get<std::string>();
  if (!content.is_array()) throw bad_request("'" + where + "' must be a string or an array of content parts");
  std::string text;
  for (const auto& part : content) {
    if (!part.is_object() || !part.contains("type") || !part["type"].is_string())
      throw bad_request("'" + where + "' parts must be objects with a 'type'");
    const std::string type = part["type"].get<std::string>();
    if (type != "text") throw bad_request("'" + where + "': content part type '" + type + "' is not supported");
    if (!part.contains("text") || !part["text"].is_string())
      throw bad_request("'" + where + "': a text part needs a string 'text'");
    if (!text.empty()) text += "\n";
    text += part["text"].get<std::string>();
  }
  return text;
}

}  // namespace

bool get_bool(const Json& body, const char* key, bool def) {
  const Json* v = field(body, key);
  if (!v) return def;
  if (!v->is_boolean()) throw bad_request(std::string("'") + key + "' must be a boolean");
  return v->get<bool>();
}

std::string get_string(const Json& body, const char* key, const std::string& def) {
  const Json* v = field(body, key);
  if (!v) return def;
  if (!v->is_string()) throw bad_request(std::string("'") + key + "' must be a string");
  return v->get<std::string>();
}

Json parse_body(const std::string& body) {
  Json j = parse_request_json(body);  // depth-limited while parsing (request_json.h)
  if (!j.is_object()) throw bad_request("the request body must be a JSON object");
  return j;
}

GenParams parse_gen_params(const Json& body, const GenParams& defaults, Api api, uint64_t random_seed,
                           const VocabAccess& vocab) {
  GenParams p = defaults;
  auto& s = p.sampling;
  s.temperature = (float)get_number(body, "temperature", s.temperature, 0.0, 100.0);
  s.top_p = (float)get_number(body, "top_p", s.top_p, 0.0, 1.0);
  s.top_k = (int)get_int(body, "top_k", s.top_k, -1, 1 << 30);
  s.min_p = (float)get_number(body, "min_p", s.min_p, 0.0, 1.0);
  s.typical_p = (float)get_number(body, "typical_p", s.typical_p, 0.0, 1.0);
  s.presence_penalty = (float)get_number(body, "presence_penalty", s.presence_penalty, -2.0, 2.0);
  s.frequency_penalty = (float)get_number(body, "frequency_penalty", s.frequency_penalty, -2.0, 2.0);
  s.repeat_penalty = (float)get_number(body, "repeat_penalty", s.repeat_penalty, 0.0, 100.0);
  s.penalty_last_n = (int)get_int(body, "repeat_last_n", s.penalty_last_n, -1, 1 << 30);
  // Absent: the server's seed (--seed). -1, here or there: a random one.
  const long long seed = get_int(body, "seed", (long long)defaults.sampling.seed,
                                 std::numeric_limits<long long>::min(), std::numeric_limits<long long>::max());
  s.seed = seed == -1 || (uint64_t)seed == kRandomSeed ? random_seed : (uint64_t)seed;

  if (const Json* lb = field(body, "logit_bias")) s.logit_bias = parse_logit_bias(*lb, vocab);
  p.post_sampling_probs = get_bool(body, "post_sampling_probs", false);
  p.return_progress = get_bool(body, "return_progress", false);
  p.timings_per_token = get_bool(body, "timings_per_token", false);

  const long long big = 1 << 30;
  if (api == Api::Native) {
    p.n_predict = (int)get_int(body, "n_predict", p.n_predict, -1, big);
    p.n_probs = (int)get_int(body, "n_probs", 0, 0, 20);
    p.logprobs = p.n_probs > 0;
    p.cache_prompt = get_bool(body, "cache_prompt", true);
  } else {
    if (field(body, "max_completion_tokens"))
      p.n_predict = (int)get_int(body, "max_completion_tokens", -1, 0, big);
    else if (field(body, "max_tokens"))
      p.n_predict = (int)get_int(body, "max_tokens", -1, 0, big);
    else
      p.n_predict = (int)get_int(body, "n_predict", p.n_predict, -1, big);
    if (api == Api::Chat) {
      p.logprobs = get_bool(body, "logprobs", false);
      p.n_probs = (int)get_int(body, "top_logprobs", 0, 0, 20);
      if (p.n_probs > 0 && !p.logprobs) throw bad_request("'top_logprobs' needs 'logprobs': true");
    } else {
      // /v1/completions: logprobs is the number of alternatives (0..5).
      p.n_probs = (int)get_int(body, "logprobs", -1, 0, 5);
      p.logprobs = p.n_probs >= 0 && field(body, "logprobs");
      if (p.n_probs < 0) p.n_probs = 0;
    }
    p.cache_prompt = get_bool(body, "cache_prompt", true);
  }
  p.ignore_eos = get_bool(body, "ignore_eos", false);
  p.n_keep = (int)get_int(body, "n_keep", 0, -1, big);
  p.n_discard = (int)get_int(body, "n_discard", 0, 0, big);
  p.stop = get_stop(body);
  return p;
}

std::vector<std::pair<int32_t, float>> parse_logit_bias(const Json& v, const VocabAccess& vocab) {
  std::vector<std::pair<int32_t, float>> out;
  auto bias_of = [](const Json& b) {
    if (b.is_number()) {
      const double x = b.get<double>();
      if (std::isnan(x)) throw bad_request("'logit_bias' values must be numbers or false");
      return (float)x;
    }
    if (b.is_boolean() && !b.get<bool>()) return -std::numeric_limits<float>::infinity();  // false bans
    throw bad_request("'logit_bias' values must be numbers or false");
  };
  auto add_id = [&](long long id, float b) {
    if (id < 0 || id > (1 << 30) || (vocab.n_vocab > 0 && id >= vocab.n_vocab))
      throw bad_request("'logit_bias': token id " + std::to_string(id) + " is outside the vocabulary" +
                        (vocab.n_vocab > 0 ? " (0.." + std::to_string(vocab.n_vocab - 1) + ")" : std::string()));
    out.emplace_back((int32_t)id, b);
  };
  auto add_text = [&](const std::string& text, float b) {
    if (!vocab.tokenize) throw bad_request("'logit_bias' keys must be token ids");
    for (int32_t id : vocab.tokenize(text)) out.emplace_back(id, b);
  };
  if (v.is_object()) {
    for (auto it = v.begin(); it != v.end(); ++it) {
      const float b = bias_of(it.value());
      // A key that is all digits is a token id (OpenAI's form); anything else is text (llama.cpp's).
      const std::string& key = it.key();
      const bool numeric = !key.empty() && key.size() < 11 &&
                           key.find_first_not_of("0123456789") == std::string::npos;
      if (numeric) add_id(std::stoll(key), b);
      else add_text(key, b);
    }
  } else if (v.is_array()) {
    for (const auto& e : v) {
      if (!e.is_array() || e.size() != 2 || !(e[0].is_number_integer() || e[0].is_string()))
        throw bad_request("'logit_bias' entries must be [token id or text, bias]");
      const float b = bias_of(e[1]);
      if (e[0].is_string()) add_text(e[0].get<std::string>(), b);
      else add_id(e[0].get<long long>(), b);
    }
  } else {
    throw bad_request("'logit_bias' must be an object or an array of [token, bias] pairs");
  }
  return out;
}

int parse_n_choices(const Json& body, int max_choices) {
  const char* key = field(body, "n_cmpl") ? "n_cmpl" : "n";
  const long long n = get_int(body, key, 1, 1, 1 << 30);
  if (n > max_choices)
    throw bad_request(std::string("'") + key + "' is " + std::to_string(n) + " but the server has " +
                      std::to_string(max_choices) + " slots (each choice needs one; raise -np)");
  return (int)n;
}

int parse_id_slot(const Json& body, int n_slots) {
  const long long id = get_int(body, "id_slot", -1, -1, 1 << 30);
  if (id >= n_slots)
    throw bad_request("'id_slot' must be -1 or a slot id below " + std::to_string(n_slots) + ", got " +
                      std::to_string(id));
  return (int)id;
}

std::vector<std::string> parse_response_fields(const Json& body) {
  std::vector<std::string> out;
  const Json* v = field(body, "response_fields");
  if (!v) return out;
  if (!v->is_array()) throw bad_request("'response_fields' must be an array of strings");
  for (const auto& f : *v) {
    if (!f.is_string()) throw bad_request("'response_fields' must be an array of strings");
    out.push_back(f.get<std::string>());
  }
  return out;
}

StreamOptions parse_stream_options(const Json& body) {
  StreamOptions o;
  o.stream = get_bool(body, "stream", false);
  if (const Json* so = field(body, "stream_options")) {
    if (!so->is_object()) throw bad_request("'stream_options' must be an object");
    o.include_usage = get_bool(*so, "include_usage", false);
  }
  return o;
}

Json normalize_messages(const Json& messages) {
  if (!messages.is_array()) throw bad_request("'messages' must be an array");
  if (messages.empty()) throw bad_request("'messages' must not be empty");
  Json out = Json::array();
  for (size_t i = 0; i < messages.size(); ++i) {
    const Json& m = messages[i];
    const std::string at = "messages[" + std::to_string(i) + "]";
    if (!m.is_object()) throw bad_request("'" + at + "' must be an object");
    if (!m.contains("role") || !m["role"].is_string()) throw bad_request("'" + at + ".role' must be a string");
    const std::string role = m["role"].get<std::string>();
    if (role != "system" && role != "user" && role != "assistant" && role != "tool" && role != "developer")
      throw bad_request("'" + at + ".role' must be system, developer, user, assistant or tool, got '" + role + "'");
    Json msg = {{"role", role == "developer" ? "system" : role}};
    const bool has_calls = m.contains("tool_calls") && !m["tool_calls"].is_null();
    if (!m.contains("content") || m["content"].is_null()) {
      if (!(role == "assistant" && has_calls)) throw bad_request("'" + at + ".content' is missing");
      msg["content"] = "";
    } else {
      msg["content"] = text_of_content(m["content"], i);
    }
    if (m.contains("reasoning_content") && m["reasoning_content"].is_string())
      msg["reasoning_content"] = m["reasoning_content"];
    if (m.contains("name") && m["name"].is_string()) msg["name"] = m["name"];
    if (m.contains("tool_call_id") && m["tool_call_id"].is_string()) msg["tool_call_id"] = m["tool_call_id"];
    if (has_calls) {
      if (!m["tool_calls"].is_array()) throw bad_request("'" + at + ".tool_calls' must be an array");
      Json calls = Json::array();
      for (const auto& c : m["tool_calls"]) {
        if (!c.is_object() || !c.contains("function") || !c["function"].is_object() ||
            !c["function"].contains("name") || !c["function"]["name"].is_string())
          throw bad_request("'" + at + ".tool_calls' entries need function.name");
        Json fn = {{"name", c["function"]["name"]}};
        Json args = c["function"].value("arguments", Json::object());
        if (args.is_string()) {
          // Templates index into the arguments, so hand them an object when the text is JSON.
          auto parsed = try_parse_embedded_json(args.get<std::string>(), "'" + at + ".tool_calls[].function.arguments'");
          if (parsed) args = std::move(*parsed);
        }
        fn["arguments"] = args;
        Json call = {{"type", "function"}, {"function", fn}};
        if (c.contains("id") && c["id"].is_string()) call["id"] = c["id"];
        calls.push_back(call);
      }
      msg["tool_calls"] = calls;
    }
    out.push_back(msg);
  }
  return out;
}

namespace {

// Whether generation continues the final (assistant) message. As
// llama-server: a conversation that ends with the assistant's message is a
// prefill; continue_final_message asks for it explicitly (true or
// "content"), and cannot go with an explicit add_generation_prompt: true.
void parse_continuation(const Json& body, ChatRequest& r) {
  const bool last_is_assistant = r.messages.back()["role"] == "assistant";
  bool asked = false;
  if (const Json* c = field(body, "continue_final_message")) {
    if (!c->is_boolean() && !c->is_string())
      throw bad_request("'continue_final_message' must be a boolean or \"content\"");
    asked = c->is_boolean() ? c->get<bool>() : c->get<std::string>() == "content";
    if (c->is_string() && !asked)
      throw bad_request("'continue_final_message': only true or \"content\" is supported");
  }
  if (asked && field(body, "add_generation_prompt") && r.add_generation_prompt)
    throw bad_request("cannot set both add_generation_prompt and continue_final_message to true");
  if (asked && !last_is_assistant)
    throw bad_request("'continue_final_message' needs the last message to be the assistant's");
  if (!last_is_assistant) return;
  const size_t n = r.messages.size();
  if (n >= 2 && r.messages[n - 2]["role"] == "assistant")
    throw bad_request("cannot have 2 or more assistant messages at the end of the list");
  r.continue_final = true;
  r.add_generation_prompt = false;
}

}  // namespace

ChatRequest parse_chat_request(const Json& body) {
  ChatRequest r;
  if (!body.contains("messages")) throw bad_request("'messages' is required");
  r.messages = normalize_messages(body["messages"]);
  std::string choice = "auto";
  if (const Json* tc = field(body, "tool_choice")) {
    if (tc->is_string()) choice = tc->get<std::string>();
    else if (tc->is_object()) choice = "required";
    else throw bad_request("'tool_choice' must be a string or an object");
    if (choice != "auto" && choice != "none" && choice != "required")
      throw bad_request("'tool_choice' must be auto, none or required");
  }
  if (const Json* tools = field(body, "tools")) {
    if (!tools->is_array()) throw bad_request("'tools' must be an array");
    for (const auto& t : *tools)
      if (!t.is_object() || !t.contains("function") || !t["function"].is_object() ||
          !t["function"].contains("name") || !t["function"]["name"].is_string())
        throw bad_request("'tools' entries must be {\"type\": \"function\", \"function\": {\"name\": ...}}");
    if (!tools->empty() && choice != "none") {
      r.tools = *tools;
      r.parse_tool_calls = true;
    }
  }
  if (const Json* kw = field(body, "chat_template_kwargs")) {
    if (!kw->is_object()) throw bad_request("'chat_template_kwargs' must be an object");
    r.template_kwargs = *kw;
  }
  if (const Json* rf = field(body, "response_format")) {
    if (!rf->is_object()) throw bad_request("'response_format' must be an object");
    const std::string type = get_string(*rf, "type", "text");
    if (type != "text" && type != "json_object" && type != "json_schema")
      throw bad_request("'response_format.type' must be text, json_object or json_schema");
    // json_object / json_schema constrain decoding (server/grammar_request.cpp).
  }
  r.add_generation_prompt = get_bool(body, "add_generation_prompt", true);
  parse_continuation(body, r);
  return r;
}

std::vector<int32_t> parse_token_array(const Json& v, const std::string& name, int n_vocab) {
  if (!v.is_array()) throw bad_request("'" + name + "' must be an array of token ids");
  std::vector<int32_t> out;
  out.reserve(v.size());
  for (const auto& t : v) {
    if (!t.is_number_integer()) throw bad_request("'" + name + "' must hold integer token ids");
    const long long id = t.get<long long>();
    if (id < 0 || id >= n_vocab)
      throw bad_request("'" + name + "': token id " + std::to_string(id) + " is outside the vocabulary (0.." +
                        std::to_string(n_vocab - 1) + ")");
    out.push_back((int32_t)id);
  }
  return out;
}

PromptInput parse_prompt(const Json& body, int n_vocab) {
  PromptInput in;
  const Json* p = field(body, "prompt");
  if (!p) throw bad_request("'prompt' is required");
  const Json* v = p;
  if (p->is_array() && p->size() == 1 && ((*p)[0].is_string() || (*p)[0].is_array())) v = &(*p)[0];
  if (v->is_string()) {
    in.text = v->get<std::string>();
  } else if (v->is_array()) {
    if (!v->empty() && (*v)[0].is_string()) throw bad_request("'prompt': only one prompt per request is supported");
    in.tokens = parse_token_array(*v, "prompt", n_vocab);
    in.is_tokens = true;
  } else {
    throw bad_request("'prompt' must be a string or an array of token ids");
  }
  return in;
}

namespace {

PromptSpec parse_one_prompt(const Json& v, int n_vocab, size_t index) {
  const std::string at = "prompt[" + std::to_string(index) + "]";
  PromptSpec spec;
  if (v.is_string()) {
    spec.push_back({v.get<std::string>(), {}, true});
  } else if (v.is_array()) {
    // Token ids and strings mixed, in order.
    for (const auto& e : v) {
      if (e.is_string()) {
        spec.push_back({e.get<std::string>(), {}, true});
        continue;
      }
      if (!e.is_number_integer())
        throw bad_request("'" + at + "' must hold token ids and strings");
      if (spec.empty() || spec.back().is_text) spec.push_back({"", {}, false});
      const long long id = e.get<long long>();
      if (id < 0 || id >= n_vocab)
        throw bad_request("'" + at + "': token id " + std::to_string(id) + " is outside the vocabulary (0.." +
                          std::to_string(n_vocab - 1) + ")");
      spec.back().tokens.push_back((int32_t)id);
    }
    if (spec.empty()) throw bad_request("'" + at + "' is empty");
  } else if (v.is_object() && v.contains("prompt_string")) {
    if (v.contains("multimodal_data") && !v["multimodal_data"].is_null())
      throw bad_request("'" + at + "': multimodal data provided, but this server does not support multimodal input");
    return parse_one_prompt(v["prompt_string"], n_vocab, index);
  } else {
    throw bad_request("'" + at +
                      "' must be a string, token ids, token ids and strings mixed, or {\"prompt_string\": ...}");
  }
  return spec;
}

}  // namespace

std::vector<PromptSpec> parse_prompts(const Json& body, int n_vocab) {
  const Json* p = field(body, "prompt");
  if (!p) throw bad_request("'prompt' is required");
  std::vector<PromptSpec> out;
  // An array holding any token id is one prompt (ids, or ids and strings
  // mixed); any other array is a list of prompts.
  bool has_ids = false;
  if (p->is_array())
    for (const auto& e : *p) has_ids = has_ids || e.is_number();
  if (p->is_array() && !has_ids) {
    if (p->empty()) throw bad_request("'prompt' must not be empty");
    // Each prompt becomes a queued task; a bound keeps one request from holding the queue.
    if (p->size() > kMaxPrompts)
      throw bad_request("'prompt' holds " + std::to_string(p->size()) + " prompts; at most " +
                        std::to_string(kMaxPrompts) + " per request");
    for (size_t i = 0; i < p->size(); ++i) out.push_back(parse_one_prompt((*p)[i], n_vocab, i));
  } else {
    out.push_back(parse_one_prompt(*p, n_vocab, 0));
  }
  return out;
}

}  // namespace oscar::server
