// Server-sent events framing for streamed responses.
#pragma once

#include <string>

#include <nlohmann/json.hpp>

namespace oscar::server {

// "data: <compact json>\n\n". JSON strings never contain raw newlines, so
// one data line always suffices.
std::string sse_data(const nlohmann::ordered_json& payload);
// The terminator OpenAI clients wait for.
inline std::string sse_done() { return "data: [DONE]\n\n"; }
// An error inside a stream (after the 200 status went out), as llama-server
// sends it: "error: {...}\n\n" is not parsed by OpenAI clients, so it is a
// data event carrying the error object.
std::string sse_error(int status, const std::string& message);

}  // namespace oscar::server
