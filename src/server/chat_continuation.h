// Assistant prefill: when a conversation ends with the assistant's own
// (partial) message, generation continues that message instead of starting
// a new turn. Templates always close a message they render, so the prompt
// is the rendering cut right after the final message's text.
#pragma once

#include <functional>
#include <string>

#include "server/request_parse.h"

namespace oscar::server {

// `rendered`: the conversation rendered without a generation prompt;
// `final_content`: the last message's text. When the text cannot be found
// in the rendering (empty, or rewritten by the template), the prompt is
// the conversation without it plus a generation prompt, then the text.
std::string continuation_prompt(const std::string& rendered, const std::string& final_content,
                                const std::function<std::string()>& render_without_final);

// The prompt a chat request generates from (/v1/chat/completions and
// /apply-template alike): `render` applied, cut for a continuation when
// the request continues its final message.
std::string chat_prompt(const ChatRequest& r, const std::function<std::string(const ChatRequest&)>& render);

}  // namespace oscar::server
