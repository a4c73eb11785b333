#include "server/request_json.h"

#include "server/api_error.h"

namespace oscar::server {

namespace {

using Json = nlohmann::ordered_json;

struct TooDeep {};

// Parses with a callback that sees the depth of every opening bracket and
// stops the parse (by throwing) as soon as one goes past the limit, so a
// deep value is never built.
Json parse_limited(std::string_view text, bool allow_syntax_errors) {
  const Json::parser_callback_t limit = [](int depth, Json::parse_event_t event, Json&) {
    if ((event == Json::parse_event_t::object_start || event == Json::parse_event_t::array_start) &&
        depth >= kMaxRequestJsonDepth)
      throw TooDeep{};
    return true;
  };
  return Json::parse(text.begin(), text.end(), limit, /*allow_exceptions=*/!allow_syntax_errors);
}

std::string too_deep_message(const std::string& what) {
  return what + " nests arrays/objects deeper than " + std::to_string(kMaxRequestJsonDepth) + " levels";
}

}  // namespace

Json parse_request_json(std::string_view text) {
  try {
    return parse_limited(text, false);
  } catch (const TooDeep&) {
    throw bad_request(too_deep_message("the request body"));
  } catch (const nlohmann::json::exception& e) {
    throw bad_request(std::string("invalid JSON in the request body: ") + e.what());
  }
}

std::optional<Json> try_parse_embedded_json(std::string_view text, const std::string& what) {
  try {
    Json j = parse_limited(text, true);
    if (j.is_discarded()) return std::nullopt;
    return j;
  } catch (const TooDeep&) {
    throw bad_request(too_deep_message(what));
  }
}

}  // namespace oscar::server
