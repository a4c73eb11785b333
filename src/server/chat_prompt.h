// A chat request rendered and tokenized the way /v1/chat/completions does it
// (BOS added only when the model wants one and the template did not write
// it), with the output format its answer is parsed with. Shared by the
// other chat-shaped APIs (Anthropic Messages, OpenAI Responses).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "chat/chat_output_parser.h"
#include "server/request_parse.h"

namespace oscar::server {

class ServerContext;

struct ChatPrompt {
  std::string text;
  std::vector<int32_t> tokens;
  chat::ChatOutputFormat format;  // reasoning split per the server's --reasoning-format; tools when asked for
};

// Throws ApiError(400) for template errors; does not check the context size.
ChatPrompt build_chat_prompt(const ServerContext& ctx, const ChatRequest& cr);

}  // namespace oscar::server
