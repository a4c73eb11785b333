#include "server/http_policy.h"

namespace oscar::server {

bool is_public_path(const std::string& path) {
  // The web UI's files are public too, for GET and HEAD only: routes.cpp
  // asks is_webui_request() before it asks this.
  return path == "/health" || path == "/v1/health" || path == "/models" || path == "/v1/models";
}

namespace {

// httplib's headers are a multimap: replace, so each header has one value
// (the default "Access-Control-Allow-Origin: *" included).
void put_header(httplib::Response& res, const char* key, const std::string& value) {
  res.headers.erase(key);
  res.set_header(key, value);
}

}  // namespace

void add_cors_headers(const httplib::Request& req, httplib::Response& res) {
  const std::string origin = req.get_header_value("Origin");
  if (origin.empty()) return;
  put_header(res, "Access-Control-Allow-Origin", origin);
  put_header(res, "Access-Control-Allow-Credentials", "true");
  put_header(res, "Vary", "Origin");
}

bool answer_preflight(const httplib::Request& req, httplib::Response& res) {
  if (req.method != "OPTIONS") return false;
  add_cors_headers(req, res);
  put_header(res, "Access-Control-Allow-Credentials", "true");  // even without an Origin, as llama-server
  put_header(res, "Access-Control-Allow-Methods", "GET, POST");
  put_header(res, "Access-Control-Allow-Headers", "*");
  put_header(res, "Access-Control-Max-Age", "86400");
  res.status = 200;
  res.set_content("", "text/html");
  return true;
}

}  // namespace oscar::server
