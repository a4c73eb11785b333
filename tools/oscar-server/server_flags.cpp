#include "server_flags.h"

#include <cerrno>
#include <cstdlib>
#include <fstream>

#include "core/error.h"

namespace oscar::tools {

namespace {

int to_int(const std::string& flag, const std::string& v, int lo, int hi) {
  errno = 0;
  char* end = nullptr;
  const long x = std::strtol(v.c_str(), &end, 10);
  if (v.empty() || *end || errno || x < lo || x > hi)
    throw Error(flag + ": expected an integer in [" + std::to_string(lo) + ", " + std::to_string(hi) + "], got '" +
                v + "'");
  return (int)x;
}

void add_keys(std::vector<std::string>& keys, const std::string& list) {
  size_t b = 0;
  while (b <= list.size()) {
    size_t e = list.find(',', b);
    if (e == std::string::npos) e = list.size();
    if (e > b) keys.push_back(list.substr(b, e - b));
    b = e + 1;
  }
}

}  // namespace

bool ServerFlags::handle(const std::string& f, const std::function<std::string()>& next) {
  auto& s = settings;
  if (f == "--host") s.host = next();
  else if (f == "--port") s.port = to_int(f, next(), 0, 65535);
  else if (f == "-np" || f == "--parallel") s.n_parallel = to_int(f, next(), 1, 256);
  else if (f == "--api-key") add_keys(s.api_keys, next());
  else if (f == "--api-key-file") {
    const std::string path = next();
    std::ifstream in(path);
    if (!in) throw Error("--api-key-file: cannot read '" + path + "'");
    std::string line;
    while (std::getline(in, line)) {
      while (!line.empty() && (line.back() == '\r' || line.back() == ' ')) line.pop_back();
      if (!line.empty()) s.api_keys.push_back(line);
    }
  } else if (f == "-to" || f == "--timeout") s.timeout_s = to_int(f, next(), 1, 1 << 30);
  else if (f == "-a" || f == "--alias") s.alias = next();
  else if (f == "--metrics") s.metrics = true;
  else if (f == "--threads-http") s.threads_http = to_int(f, next(), -1, 1024);
  else if (f == "--slots") s.slots_endpoint = true;
  else if (f == "--no-slots") s.slots_endpoint = false;
  else if (f == "--embedding" || f == "--embeddings") s.embeddings = true;
  else if (f == "--spm-infill") s.spm_infill = true;
  else if (f == "--pooling") {
    s.pooling = next();
    if (s.pooling != "none" && s.pooling != "mean" && s.pooling != "cls" && s.pooling != "last" && s.pooling != "rank")
      throw Error("--pooling: expected none, mean, cls, last or rank, got '" + s.pooling + "'");
  } else if (f == "--max-body-bytes") s.max_body_bytes = (size_t)to_int(f, next(), 1024, 1 << 30);
  else if (f == "--no-webui" || f == "--webui" || f == "-cb" || f == "--cont-batching") {
    // Accepted for llama-server compatibility: there is no web UI, and batching is always continuous.
  } else {
    return false;
  }
  return true;
}

std::string server_usage() {
  return "server:\n"
         "  --host HOST              listen address (default 127.0.0.1)\n"
         "  --port N                 listen port (default 8080; 0: any free port, printed at start)\n"
         "  -np, --parallel N        slots decoding together (default 4); -c is divided among them\n"
         "  --api-key KEY[,KEY]      require a key (Authorization: Bearer KEY) on every endpoint but /health\n"
         "  --api-key-file FILE      keys, one per line\n"
         "  -to, --timeout N         socket read/write timeout in seconds (default 600)\n"
         "  -a, --alias NAME         model name reported by the API\n"
         "  --metrics                enable GET /metrics (Prometheus)\n"
         "  --threads-http N         HTTP worker threads\n"
         "  --no-slots               disable GET /slots\n"
         "  --max-body-bytes N       request body limit (default 16 MiB)\n"
         "  --embedding              serve /v1/embeddings, /embedding, /embeddings (alias --embeddings)\n"
         "  --spm-infill             /infill puts the suffix before the prefix (some models prefer it)\n"
         "  --pooling TYPE           none|mean|cls|last for embeddings (default: the GGUF's, else last)\n"
         "  --jinja, --no-webui, -cb accepted (always Jinja templates; no web UI; always continuous batching)\n";
}

}  // namespace oscar::tools
