// POST /infill: code completion between a prefix and a suffix, answered like
// /completion (llama-server's native shape, streamed or whole).
#pragma once

namespace httplib {
class Server;
}

namespace oscar::server {

class ServerContext;

void register_infill_routes(httplib::Server& svr, ServerContext& ctx);

}  // namespace oscar::server
