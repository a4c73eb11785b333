#include "server/webui_routes.h"

#include <httplib.h>
#include <sys/stat.h>

#include "core/error.h"
#include "server/server_settings.h"
#include "server/webui_assets.h"

namespace oscar::server {

namespace {

bool is_get(const std::string& method) { return method == "GET" || method == "HEAD"; }

const WebuiAsset* find_asset(const WebuiBundle& b, const std::string& path) {
  const std::string p = path == "/" ? "/index.html" : path;
  for (size_t i = 0; i < b.count; ++i)
    if (p == b.assets[i].path) return &b.assets[i];
  return nullptr;
}

// No "..", no empty or "." segments' tricks: the same paths httplib's mount
// point would accept (it refuses anything leaving the folder).
bool path_stays_inside(const std::string& path) {
  if (path.empty() || path[0] != '/') return false;
  size_t b = 1;
  while (b <= path.size()) {
    size_t e = path.find('/', b);
    if (e == std::string::npos) e = path.size();
    if (path.compare(b, e - b, "..") == 0 && e - b == 2) return false;
    b = e + 1;
  }
  return path.find('\\') == std::string::npos;
}

bool is_regular_file(const std::string& p) {
  struct stat st {};
  return ::stat(p.c_str(), &st) == 0 && S_ISREG(st.st_mode);
}

bool is_folder(const std::string& p) {
  struct stat st {};
  return ::stat(p.c_str(), &st) == 0 && S_ISDIR(st.st_mode);
}

std::string regex_escape(const std::string& s) {
  std::string out;
  for (char c : s) {
    if (std::string("\\^$.|?*+()[]{}").find(c) != std::string::npos) out += '\\';
    out += c;
  }
  return out;
}

void serve_asset(const WebuiAsset& a, httplib::Response& res) {
  res.set_content(reinterpret_cast<const char*>(a.data), a.size, a.content_type);
  // Vite puts a content hash in every asset's name, so those never change;
  // index.html names the current ones and must be fetched again.
  const bool hashed = std::string(a.path).rfind("/assets/", 0) == 0;
  res.set_header("Cache-Control", hashed ? "public, max-age=31536000, immutable" : "no-cache");
}

}  // namespace

const char* webui_not_built_page() {
  return R"(<!doctype html>
<html lang="en"><head><meta charset="utf-8"><meta name="viewport" content="width=device-width, initial-scale=1">
<title>oscar-server: web UI not built</title>
<style>body{font-family:system-ui,sans-serif;max-width:42rem;margin:3rem auto;padding:0 1rem;line-height:1.5}
code,pre{background:#f0f0f0;padding:.1rem .3rem;border-radius:4px}pre{padding:.6rem}</style></head>
<body><h1>The web UI was not built into this oscar-server</h1>
<p>The server is running and its API answers at <code>/v1</code> (for example
<code>/v1/chat/completions</code>, <code>/props</code>, <code>/health</code>), but this binary was built
on a machine without Node.js/npm or without the web UI's packages, so it has no chat page.</p>
<p>To build it (Debian 12: <code>apt-get install nodejs npm</code>), from the source folder:</p>
<pre>cd webui &amp;&amp; npm ci &amp;&amp; npm run build &amp;&amp; cd ..
cmake --build build</pre>
<p>or run <code>bash scripts/setup-and-run.sh</code>, which does all of it. Then restart oscar-server.
<code>--path DIR</code> serves a folder instead; <code>--no-webui</code> turns this page off.</p>
</body></html>
)";
}

bool is_webui_request(const ServerSettings& s, const std::string& method, const std::string& path) {
  if (!s.webui || !is_get(method)) return false;
  if (!s.webui_path.empty()) {
    if (!path_stays_inside(path)) return false;
    const std::string file = s.webui_path + path + (path.back() == '/' ? "index.html" : "");
    return is_regular_file(file);
  }
  const WebuiBundle b = webui_bundle();
  if (b.count == 0) return path == "/" || path == "/index.html";
  return find_asset(b, path) != nullptr;
}

void register_webui_routes(httplib::Server& svr, const ServerSettings& s) {
  if (!s.webui) return;
  if (!s.webui_path.empty()) {
    if (!is_folder(s.webui_path) || !svr.set_mount_point("/", s.webui_path))
      throw Error("--path: '" + s.webui_path + "' is not a readable folder");
    return;
  }
  const WebuiBundle b = webui_bundle();
  if (b.count == 0) {
    auto page = [](const httplib::Request&, httplib::Response& res) {
      res.set_content(webui_not_built_page(), "text/html; charset=utf-8");
    };
    svr.Get("/", page);
    svr.Get("/index.html", page);
    return;
  }
  for (size_t i = 0; i < b.count; ++i) {
    const WebuiAsset* a = &b.assets[i];
    auto handler = [a](const httplib::Request&, httplib::Response& res) { serve_asset(*a, res); };
    svr.Get(regex_escape(a->path), handler);
    if (std::string(a->path) == "/index.html") svr.Get("/", handler);
  }
}

}  // namespace oscar::server
