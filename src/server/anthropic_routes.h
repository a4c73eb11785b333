// POST /v1/messages and /v1/messages/count_tokens (Anthropic Messages API).
// Errors, including bad input, answer in Anthropic's error shape.
#pragma once

namespace httplib {
class Server;
}

namespace oscar::server {

class ServerContext;

void register_anthropic_routes(httplib::Server& svr, ServerContext& ctx);

}  // namespace oscar::server
