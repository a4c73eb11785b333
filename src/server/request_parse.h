// Validation of request bodies: every field the server reads is checked for
// type and range here, and anything wrong becomes an ApiError(400) naming
// the field. Unknown fields are ignored, as OpenAI's and llama.cpp's servers
// do. Nothing here touches the model, so it runs on the HTTP threads.
#pragma once

#include <functional>
#include <string>
#include <utility>
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

// What parsing may ask of the model's vocabulary: its size (token ids are
// checked against it when > 0) and text -> ids (logit_bias keyed by text).
struct VocabAccess {
  int n_vocab = 0;
  std::function<std::vector<int32_t>(const std::string&)> tokenize;
};

// llama.cpp's "no seed given" value: a request resolves it to a random one.
constexpr uint64_t kRandomSeed = 0xFFFFFFFF;

// Sampling, limits, stop strings and logprobs; `defaults` are the server's
// settings. A request without a seed uses the defaults' seed (--seed);
// `random_seed` stands in where that, or the request's, is -1 (random).
GenParams parse_gen_params(const Json& body, const GenParams& defaults, Api api, uint64_t random_seed,
                           const VocabAccess& vocab = {});
// logit_bias in either form: {"id or text": bias} (OpenAI) or [[id or text,
// bias], ...] (llama.cpp); false bans the token. A text stands for each of
// its tokens.
std::vector<std::pair<int32_t, float>> parse_logit_bias(const Json& v, const VocabAccess& vocab);
// n (or llama.cpp's n_cmpl): choices per prompt, 1..max_choices (a choice
// takes a slot, so llama-server caps it at the slot count).
int parse_n_choices(const Json& body, int max_choices);
// id_slot: -1 (any) or a slot id below n_slots.
int parse_id_slot(const Json& body, int n_slots);
// response_fields: the native response projected onto these paths.
std::vector<std::string> parse_response_fields(const Json& body);
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
  // The last message is the assistant's and generation continues it
  // (assistant prefill, or continue_final_message).
  bool continue_final = false;
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

// One prompt of /completion or /v1/completions, as llama-server takes it: a
// string, token ids, ids and strings mixed, or {"prompt_string": ...}. The
// pieces are joined in order; a BOS may be added only when the first piece
// is text.
struct PromptPiece {
  std::string text;
  std::vector<int32_t> tokens;
  bool is_text = true;
};
using PromptSpec = std::vector<PromptPiece>;
// Every prompt of a request ("prompt" may hold several); multimodal data
// is refused with a 400, as this server has no media support.
constexpr size_t kMaxPrompts = 1024;
std::vector<PromptSpec> parse_prompts(const Json& body, int n_vocab);
// Token ids of /detokenize and similar: an array of integers in [0, n_vocab).
std::vector<int32_t> parse_token_array(const Json& v, const std::string& field, int n_vocab);

// Typed getters: absent or null gives nullopt-like defaults; a wrong type
// throws ApiError(400) naming the field.
bool get_bool(const Json& body, const char* key, bool def);
std::string get_string(const Json& body, const char* key, const std::string& def);

}  // namespace oscar::server
