// The generation relay of generation_routes.cpp, for the route files of the
// other APIs (Anthropic Messages, OpenAI Responses, infill): submit a task
// and relay its events through a shaper, streamed or whole, cancelling the
// task when the client goes away. ApiErrors propagate to the caller, which
// renders them in its API's error shape.
#pragma once

#include <cstdint>
#include <memory>
#include <string>

#include "server/response_shaper.h"
#include "server/task.h"

namespace httplib {
struct Request;
struct Response;
}  // namespace httplib

namespace oscar::server {

class ServerContext;

void relay_task(ServerContext& ctx, const httplib::Request& req, httplib::Response& res, Task task,
                std::unique_ptr<ResponseShaper> shaper, bool stream);
// prefix + 24 random alphanumerics.
std::string new_response_id(const char* prefix);
// The seed of a request that gives none.
uint64_t new_request_seed();

}  // namespace oscar::server
