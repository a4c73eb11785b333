#include "server/sse.h"

#include "server/api_error.h"

namespace oscar::server {

std::string sse_data(const nlohmann::ordered_json& payload) {
  // Replace invalid UTF-8 rather than throw: generated text is checked, but a
  // stream must never die half-way on a formatting error.
  return "data: " + payload.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace) + "\n\n";
}

std::string sse_error(int status, const std::string& message) {
  return sse_data(error_body(status, message));
}

}  // namespace oscar::server
