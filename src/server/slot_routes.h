// POST /slots/{id}?action=save|restore|erase (llama-server's slot
// persistence; slot_persistence.h does the work).
#pragma once

namespace httplib {
class Server;
}

namespace oscar::server {

class ServerContext;

void register_slot_routes(httplib::Server& svr, ServerContext& ctx);

}  // namespace oscar::server
