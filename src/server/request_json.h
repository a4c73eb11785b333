// The one place a request's JSON is parsed. Every body (and every JSON text
// embedded in one, such as a tool call's "arguments" string) goes through
// here, so one depth limit bounds every later recursive walk: copies of
// nlohmann values, dump(), the template Value conversion, tool schemas.
// The limit is enforced while parsing (nlohmann's parser itself is
// iterative), before anything can recurse over the value; the size of the
// text is bounded earlier, by --max-body-bytes at the HTTP layer.
#pragma once

#include <optional>
#include <string_view>

#include <nlohmann/json.hpp>

namespace oscar::server {

// Deepest nesting of arrays/objects a request may use. Real requests (JSON
// schemas of tools, template kwargs) stay far below this; every recursive
// walk in the server and the template engine (chat/json_io allows 512)
// is safe at this depth with the default thread stacks.
inline constexpr int kMaxRequestJsonDepth = 128;

// Parses `text`; throws ApiError(400) for malformed JSON (including invalid
// UTF-8) and for nesting deeper than kMaxRequestJsonDepth.
nlohmann::ordered_json parse_request_json(std::string_view text);

// For JSON embedded in a string field: nullopt when the text is not JSON,
// ApiError(400) naming `what` when it is JSON nested too deeply.
std::optional<nlohmann::ordered_json> try_parse_embedded_json(std::string_view text, const std::string& what);

}  // namespace oscar::server
