// Who may call what, as llama-server decides it: CORS (the caller's Origin
// echoed, credentials allowed, preflights answered without a key) and the
// paths that stay public when API keys are set.
#pragma once

#include <httplib.h>

#include <string>

namespace oscar::server {

// Paths served without an API key: health and the model list (the web UI's
// files are decided by is_webui_request, webui_routes.h).
bool is_public_path(const std::string& path);

// Adds the CORS headers to any response: a request that names its Origin
// gets it echoed back with credentials allowed (a browser refuses "*" for
// credentialed requests); others keep the default "*".
void add_cors_headers(const httplib::Request& req, httplib::Response& res);

// True (and the response filled: 200, empty body, allowed methods and
// headers) when `req` is a CORS preflight, which browsers send without
// credentials, so it must be answered before any key check.
bool answer_preflight(const httplib::Request& req, httplib::Response& res);

}  // namespace oscar::server
