// A chat task's events in the OpenAI Responses shape. The chat output
// parser splits the text into reasoning, text and tool calls; each run of
// one kind is an output item (reasoning, message, function_call). Streamed,
// that is the Responses event sequence: response.created and .in_progress,
// per item output_item.added / .done around its parts and deltas
// (content_part, output_text, reasoning_text, function_call_arguments),
// then response.completed (or response.incomplete when max_output_tokens
// ran out), each event numbered and sent with its event name.
#pragma once

#include <ctime>
#include <memory>
#include <string>

#include "server/response_shaper.h"

namespace oscar::server {

struct ResponsesShaperInfo {
  std::string id;          // resp_...
  std::string model;
  std::time_t created = 0;
  int n_input = 0;         // prompt tokens
  Json echo;               // request fields the response object repeats
};

std::unique_ptr<ResponseShaper> make_responses_shaper(ResponsesShaperInfo info, const chat::ChatOutputFormat& fmt,
                                                      const std::string& prompt);

}  // namespace oscar::server
