// Anthropic Messages requests (POST /v1/messages, /v1/messages/count_tokens)
// checked and translated into the server's chat request: the system prompt
// and content blocks become OpenAI-style messages (tool_use blocks become
// tool_calls, tool_result blocks role "tool" messages, thinking blocks the
// reasoning_content templates render), tools their function form, and the
// sampling fields the chat ones. Everything wrong is an ApiError(400) that
// names the field, rendered in Anthropic's error shape at the edge.
#pragma once

#include <cstdint>

#include "server/request_parse.h"

namespace oscar::server {

struct AnthropicRequest {
  ChatRequest chat;
  GenParams params;
  bool stream = false;
};

// `count_only`: /v1/messages/count_tokens, where max_tokens and the sampling
// fields are not part of the request.
AnthropicRequest parse_anthropic_request(const Json& body, const GenParams& defaults, uint64_t seed_if_unset,
                                         bool count_only = false);

// The OpenAI chat-completions body the request amounts to (exposed for tests).
Json anthropic_to_chat_body(const Json& body, bool count_only);

}  // namespace oscar::server
