// Forced tool calls: with `tool_choice: "required"` or a named function, the
// output must be a call (or, with parallel_tool_calls, several) in the
// template's tool-call syntax whose arguments validate against the
// function's `parameters` schema. A think block the template opened in the
// prompt is finished freely first; otherwise the call comes first.
#pragma once

#include <memory>
#include <string>

#include "chat/chat_output_parser.h"
#include "grammar/grammar.h"
#include "grammar/grammar_cache.h"
#include "server/request_parse.h"

namespace oscar::server {

// The GBNF for the forced call(s); "" when the request forces no call.
// "" also for templates whose call syntax has no grammar here (only
// Hermes/Qwen <tool_call> JSON has one). Throws ApiError(400) for an unknown
// named function or a bad parameters schema.
std::string tool_call_gbnf(const Json& body, const chat::ChatOutputFormat& fmt, const std::string& prompt);

// The same, compiled through the cache; null when no call is forced.
std::shared_ptr<const grammar::Grammar> tool_call_grammar(const Json& body, const chat::ChatOutputFormat& fmt,
                                                          const std::string& prompt, grammar::GrammarCache& cache);

}  // namespace oscar::server
