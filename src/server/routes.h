// HTTP endpoints of oscar-server on a cpp-httplib server. Handlers parse and
// validate, hand generation to the scheduler, and shape results; they never
// touch the model directly.
#pragma once

namespace httplib {
class Server;
}

namespace oscar::server {

class ServerContext;

// Everything: auth and error handling, the model-independent endpoints and
// the generation endpoints.
void register_routes(httplib::Server& svr, ServerContext& ctx);
// The generation endpoints alone (/v1/chat/completions, /v1/completions,
// /completion), in generation_routes.cpp.
void register_generation_routes(httplib::Server& svr, ServerContext& ctx);

}  // namespace oscar::server
