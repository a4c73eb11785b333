// Validation of request bodies: every field the server reads is checked for
// type and range here, and anything wrong becomes an ApiError(400) naming
// the field. Unknown fields are ignored, as OpenAI's and llama.cpp's servers
// do. Nothing here touches the model, so it runs on the HTTP threads.
#pragma once

#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "server/task.h"

namespace oscar::server {

using Json = nlohmann::ordered_json;

// Parses a body; malformed JSON (including invalid UTF-8) and non-object
// bodies are 400s.
Json parse_body(const std::string& body);

enum class Api { Chat, Completions, Native };

struct StreamOptions {
  bool stream = false;
  bool include_usage = false;  // stream_options.include_usage
};

// Sampling, limits, stop strings and logprobs; `defaults` are the server's
// settings. `seed_if_unset` is used when the request gives no seed.
GenParams parse_gen_params(const Json& body, const GenParams& defaults, Api api, uint64_t seed_if_unset);
StreamOptions parse_stream_options(const Json& body);

// Chat inputs checked and reshaped for a chat template: content parts
// joined into text, tool-call arguments given as JSON text turned into
// objects (templates index into them).
struct ChatRequest {
  Json messages = Json::array();
  Json tools;                   // null when none (or tool_choice "none")
  bool parse_tool_calls = false;
  Json template_kwargs = Json::object();
  bool add_generation_prompt = true;
};
ChatRequest parse_chat_request(const Json& body);
// /apply-template and /v1/chat/completions share the message checks.
Json normalize_messages(const Json& messages);

// A completion prompt: text, or token ids (checked against n_vocab).
struct PromptInput {
  std::string text;
  std::vector<int32_t> tokens;
  bool is_tokens = false;
};
PromptInput parse_prompt(const Json& body, int n_vocab);
// Token ids of /detokenize and similar: an array of integers in [0, n_vocab).
std::vector<int32_t> parse_token_array(const Json& v, const std::string& field, int n_vocab);

// Typed getters: absent or null gives nullopt-like defaults; a wrong type
// throws ApiError(400) naming the field.
bool get_bool(const Json& body, const char* key, bool def);
std::string get_string(const Json& body, const char* key, const std::string& def);

}  // namespace oscar::server
