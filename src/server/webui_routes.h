// The web UI at `/`: the built-in bundle (webui_assets.h), a folder given by
// --path (as llama-server), or nothing with --no-webui (404 as llama-server).
#pragma once

#include <string>

namespace httplib {
class Server;
}

namespace oscar::server {

struct ServerSettings;
struct WebuiBundle;

// Registers the routes (or the folder mount). Throws Error when --path is
// not a folder.
void register_webui_routes(httplib::Server& svr, const ServerSettings& s);

// True when the request is for one of the page's files: those are served
// without an API key (the page asks for the key itself) and before the model
// has loaded.
bool is_webui_request(const ServerSettings& s, const std::string& method, const std::string& path);

// The page served at `/` when the bundle was not built into the binary.
const char* webui_not_built_page();

}  // namespace oscar::server
