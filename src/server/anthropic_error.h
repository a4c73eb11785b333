// Anthropic's error body: {"type": "error", "error": {"type", "message"}},
// with Anthropic's names for the error types.
#pragma once

#include <string>

#include <nlohmann/json.hpp>

namespace oscar::server {

inline std::string anthropic_error_type(int status) {
  switch (status) {
    case 401: return "authentication_error";
    case 403: return "permission_error";
    case 404: return "not_found_error";
    case 413: return "request_too_large";
    case 429: return "rate_limit_error";
    case 503: return "overloaded_error";
    default: return status >= 500 ? "api_error" : "invalid_request_error";
  }
}

inline nlohmann::ordered_json anthropic_error_body(int status, const std::string& message) {
  return {{"type", "error"}, {"error", {{"type", anthropic_error_type(status)}, {"message", message}}}};
}

}  // namespace oscar::server
