// A chat task's events in Anthropic's Messages shape. The chat output
// parser splits the text into thinking, text and tool calls; each run of one
// kind becomes a content block. Streamed, that is Anthropic's event
// sequence: message_start, ping, per block content_block_start / _delta / _stop
// (indices counting the blocks), message_delta (stop_reason, usage) and
// message_stop, each sent with its event name.
#pragma once

#include <memory>
#include <string>

#include "server/response_shaper.h"

namespace oscar::server {

struct AnthropicShaperInfo {
  std::string id;        // msg_...
  std::string model;     // alias reported back
  int n_input = 0;       // prompt tokens, known before the first event
};

std::unique_ptr<ResponseShaper> make_anthropic_shaper(AnthropicShaperInfo info, const chat::ChatOutputFormat& fmt,
                                                      const std::string& prompt);

}  // namespace oscar::server
