// The chat page's files compiled into oscar-server. The table is generated
// at build time by cmake/embed_webui.cmake from webui/'s Vite build; it is
// empty when the bundle could not be built (no node/npm), and then `/`
// serves a page saying how to build it.
#pragma once

#include <cstddef>

namespace oscar::server {

struct WebuiAsset {
  const char* path;          // URL path, e.g. "/index.html", "/assets/index-1a2b.js"
  const char* content_type;
  const unsigned char* data;
  size_t size;
};

struct WebuiBundle {
  const WebuiAsset* assets;
  size_t count;  // 0: the web UI was not built into this binary
};

WebuiBundle webui_bundle();

}  // namespace oscar::server
