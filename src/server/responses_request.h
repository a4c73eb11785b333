// OpenAI Responses requests (POST /v1/responses) checked and translated into
// the server's chat request: instructions become the system message; input
// items (messages with input_text / output_text parts, function_call,
// function_call_output, reasoning) become chat messages, tool calls, tool
// results and reasoning_content; function tools their chat form. The
// server is stateless: previous_response_id is refused (400), and nothing is
// stored whatever `store` says.
#pragma once

#include <cstdint>

#include "server/request_parse.h"

namespace oscar::server {

struct ResponsesRequest {
  ChatRequest chat;
  GenParams params;
  bool stream = false;
  Json echo = Json::object();  // request fields the response object repeats (instructions, tools, ...)
};

ResponsesRequest parse_responses_request(const Json& body, const GenParams& defaults, uint64_t seed_if_unset);

// The OpenAI chat-completions body the request amounts to (exposed for tests).
Json responses_to_chat_body(const Json& body);

}  // namespace oscar::server
