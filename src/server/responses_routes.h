// POST /v1/responses (OpenAI Responses API, stateless).
#pragma once

namespace httplib {
class Server;
}

namespace oscar::server {

class ServerContext;

void register_responses_routes(httplib::Server& svr, ServerContext& ctx);

}  // namespace oscar::server
