#include "server/api_error.h"

namespace oscar::server {

std::string default_error_type(int status) {
  switch (status) {
    case 401: return "authentication_error";
    case 404: return "not_found_error";
    case 501: return "not_supported_error";
    case 503: return "unavailable_error";
    default: return status >= 500 ? "server_error" : "invalid_request_error";
  }
}

nlohmann::ordered_json error_body(int status, const std::string& message, const std::string& type,
                                  const nlohmann::ordered_json& extra) {
  nlohmann::ordered_json e = {{"code", status},
                              {"message", message},
                              {"type", type.empty() ? default_error_type(status) : type},
                              {"param", nullptr}};
  if (extra.is_object())
    for (auto it = extra.begin(); it != extra.end(); ++it) e[it.key()] = it.value();
  return {{"error", e}};
}

}  // namespace oscar::server
