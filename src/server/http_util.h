// Small helpers shared by the route files: JSON replies and error replies.
#pragma once

#include <httplib.h>

#include <string>

#include "server/api_error.h"
#include "server/request_parse.h"

namespace oscar::server {

// Dumps with invalid UTF-8 replaced (generated text may end mid-sequence).
inline std::string dump_json(const Json& j) {
  return j.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
}

inline void reply_json(httplib::Response& res, const Json& j, int status = 200) {
  res.status = status;
  res.set_content(dump_json(j), "application/json; charset=utf-8");
}

inline void reply_error(httplib::Response& res, const ApiError& e) {
  reply_json(res, error_body(e.status(), e.what(), e.type(), e.extra), e.status());
}

// Runs a handler body, turning ApiErrors into error replies.
template <class F>
void guarded(httplib::Response& res, F&& f) {
  try {
    f();
  } catch (const ApiError& e) {
    reply_error(res, e);
  }
}

}  // namespace oscar::server
