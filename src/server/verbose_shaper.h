// llama-server with -v/--verbose: OpenAI-shaped answers (chat completions,
// completions) also carry "__verbose", the same result in llama.cpp's native
// /completion shape (content, tokens_predicted, generation_settings,
// timings...), a debugging aid. Whole responses get it as a field; a stream
// gets it on the first chunk sent for the task's final event, as
// llama-server puts it on the first chunk of its final result.
#pragma once

#include <memory>

#include "server/response_shaper.h"

namespace oscar::server {

// `shown` answers the client; `native` is fed the same events and supplies
// "__verbose".
std::unique_ptr<ResponseShaper> with_verbose(std::unique_ptr<ResponseShaper> shown,
                                             std::unique_ptr<ResponseShaper> native);

}  // namespace oscar::server
