// Errors a request can cause, carried to the HTTP edge and rendered as
// OpenAI's error body: {"error": {"code", "message", "type", "param"}}.
#pragma once

#include <stdexcept>
#include <string>

#include <nlohmann/json.hpp>

namespace oscar::server {

class ApiError : public std::runtime_error {
 public:
  ApiError(int status, const std::string& message, std::string type = "invalid_request_error")
      : std::runtime_error(message), status_(status), type_(std::move(type)) {}
  int status() const { return status_; }
  const std::string& type() const { return type_; }
  // Extra fields merged into the error object (e.g. n_prompt_tokens, n_ctx).
  nlohmann::ordered_json extra = nlohmann::ordered_json::object();

 private:
  int status_;
  std::string type_;
};

inline ApiError bad_request(const std::string& msg) { return ApiError(400, msg); }

// The body for an error; the type defaults from the status.
nlohmann::ordered_json error_body(int status, const std::string& message, const std::string& type = "",
                                  const nlohmann::ordered_json& extra = nullptr);
std::string default_error_type(int status);

}  // namespace oscar::server
