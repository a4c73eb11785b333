// One file over HTTP(S): resumable, checksummed, with progress. The
// repository logic of -hf lives in hf_repo.cpp.
#include "download.h"

#include <httplib.h>
#include <openssl/evp.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <thread>

#include "core/error.h"

namespace fs = std::filesystem;

namespace oscar::tools {

namespace {

const char* get_env(const EnvLookup& env, const char* name) {
  const char* v = env ? env(name) : std::getenv(name);
  return v && *v ? v : nullptr;
}

std::string home_dir(const EnvLookup& env) {
  const char* h = get_env(env, "HOME");
  if (!h) throw Error("cannot find the cache folder: HOME is not set (set LLAMA_CACHE)");
  return h;
}

// "https://host:port/path?q" -> ("https://host:port", "/path?q").
std::pair<std::string, std::string> split_url(const std::string& url) {
  const size_t scheme = url.find("://");
  if (scheme == std::string::npos || (url.compare(0, scheme, "http") != 0 && url.compare(0, scheme, "https") != 0))
    throw Error("not an http(s) URL: '" + url + "'");
  const size_t path = url.find('/', scheme + 3);
  if (path == std::string::npos) return {url, "/"};
  return {url.substr(0, path), url.substr(path)};
}

std::unique_ptr<httplib::Client> client_for(const std::string& base, const DownloadOptions& o) {
  auto cli = std::make_unique<httplib::Client>(base);
  cli->set_follow_location(true);  // the hub redirects file downloads to its CDN
  cli->set_connection_timeout(30, 0);
  cli->set_read_timeout(60, 0);
  httplib::Headers h = {{"User-Agent", "oscar.cpp"}};
  if (!o.token.empty()) h.emplace("Authorization", "Bearer " + o.token);
  cli->set_default_headers(h);
  return cli;
}

// A bar on stderr while the download runs, when stderr is a terminal.
void draw_bar(const std::string& name, size_t done, size_t total) {
  if (!isatty(2) || total == 0) return;
  const int width = 40;
  const int filled = (int)(width * (double)done / (double)total);
  std::fprintf(stderr, "\rdownloading %s [%s%s] %3d%%", name.c_str(), std::string(filled, '#').c_str(),
               std::string(width - filled, ' ').c_str(), (int)(100.0 * (double)done / (double)total));
  if (done >= total) std::fputc('\n', stderr);
  std::fflush(stderr);
}

// One GET into `tmp`, from its current size on. Returns "" on success, else why it failed.
std::string pull_once(const std::string& url, const std::string& tmp, const DownloadOptions& o) {
  const auto [base, path] = split_url(url);
  auto cli = client_for(base, o);
  size_t have = fs::exists(tmp) ? (size_t)fs::file_size(tmp) : 0;
  httplib::Headers headers;
  if (have > 0) headers.emplace("Range", "bytes=" + std::to_string(have) + "-");
  std::ofstream out;
  size_t total = 0;
  std::string status_error;
  const std::string name = fs::path(path.substr(0, path.find('?'))).filename().string();
  auto res = cli->Get(
      path, headers,
      [&](const httplib::Response& r) {
        if (have > 0 && r.status == 200) have = 0;  // the server ignored the range: start over
        else if (have > 0 && r.status != 206) {
          status_error = "HTTP " + std::to_string(r.status) + " for a resumed download";
          return false;
        } else if (have == 0 && r.status != 200) {
          status_error = "HTTP " + std::to_string(r.status);
          return false;
        }
        out.open(tmp, std::ios::binary | (have > 0 ? std::ios::app : std::ios::trunc));
        if (!out) {
          status_error = "cannot write '" + tmp + "'";
          return false;
        }
        if (r.has_header("Content-Length")) total = have + std::stoull(r.get_header_value("Content-Length"));
        return true;
      },
      [&](const char* data, size_t len) {
        out.write(data, (std::streamsize)len);
        have += len;
        if (o.progress) o.progress(have, total);
        draw_bar(name, have, total);
        return (bool)out;
      });
  out.close();
  if (!status_error.empty()) return status_error;
  if (!res) return "connection failed: " + httplib::to_string(res.error());
  if (total != 0 && have != total)
    return "connection closed after " + std::to_string(have) + " of " + std::to_string(total) + " bytes";
  return "";
}

}  // namespace

CacheDirs cache_dirs(const EnvLookup& env) {
  CacheDirs d;
  if (const char* c = get_env(env, "LLAMA_CACHE")) d.llama = c;
  else if (const char* x = get_env(env, "XDG_CACHE_HOME")) d.llama = std::string(x) + "/llama.cpp";
  else d.llama = home_dir(env) + "/.cache/llama.cpp";
  if (const char* c = get_env(env, "LLAMA_CACHE")) d.hf_hub = c;
  else if (const char* h = get_env(env, "HF_HUB_CACHE")) d.hf_hub = h;
  else if (const char* h2 = get_env(env, "HUGGINGFACE_HUB_CACHE")) d.hf_hub = h2;
  else if (const char* hh = get_env(env, "HF_HOME")) d.hf_hub = std::string(hh) + "/hub";
  else if (const char* x = get_env(env, "XDG_CACHE_HOME")) d.hf_hub = std::string(x) + "/huggingface/hub";
  else d.hf_hub = home_dir(env) + "/.cache/huggingface/hub";
  return d;
}

std::string model_endpoint(const EnvLookup& env) {
  const char* e = get_env(env, "MODEL_ENDPOINT");
  if (!e) e = get_env(env, "HF_ENDPOINT");
  std::string out = e ? e : "https://huggingface.co/";
  if (out.back() != '/') out += '/';
  return out;
}

std::string sha256_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw Error("cannot read '" + path + "'");
  std::unique_ptr<EVP_MD_CTX, void (*)(EVP_MD_CTX*)> ctx(EVP_MD_CTX_new(), EVP_MD_CTX_free);
  EVP_DigestInit_ex(ctx.get(), EVP_sha256(), nullptr);
  std::vector<char> buf(1 << 20);
  while (in) {
    in.read(buf.data(), (std::streamsize)buf.size());
    if (in.gcount() > 0) EVP_DigestUpdate(ctx.get(), buf.data(), (size_t)in.gcount());
  }
  unsigned char md[EVP_MAX_MD_SIZE];
  unsigned int n = 0;
  EVP_DigestFinal_ex(ctx.get(), md, &n);
  static const char* hex = "0123456789abcdef";
  std::string out;
  for (unsigned int i = 0; i < n; ++i) out += {hex[md[i] >> 4], hex[md[i] & 15]};
  return out;
}

void download_file(const std::string& url, const std::string& path, const DownloadOptions& o,
                   const std::string& sha256) {
  if (fs::exists(path)) return;
  if (o.offline) throw Error("offline: '" + path + "' is not in the cache (it would come from " + url + ")");
  std::error_code ec;
  fs::create_directories(fs::path(path).parent_path(), ec);
  const std::string tmp = path + ".downloadInProgress";
  std::string why;
  int delay = o.retry_delay_ms;
  for (int attempt = 0; attempt < o.attempts; ++attempt) {
    if (attempt > 0) {
      std::this_thread::sleep_for(std::chrono::milliseconds(delay));
      delay *= 2;
    }
    why = pull_once(url, tmp, o);
    if (why.empty()) break;
    if (why.rfind("HTTP 4", 0) == 0) break;  // not found / forbidden: retrying will not help
  }
  if (!why.empty())
    throw Error("download of " + url + " failed: " + why +
                (fs::exists(tmp) ? " (partial data kept in '" + tmp + "'; run again to resume)" : ""));
  if (!sha256.empty()) {
    const std::string got = sha256_file(tmp);
    if (got != sha256) {
      fs::remove(tmp, ec);
      throw Error("download of " + url + ": checksum mismatch (SHA-256 " + got + ", the repository says " + sha256 +
                  "); the file was removed");
    }
  }
  fs::rename(tmp, path, ec);
  if (ec) throw Error("cannot move '" + tmp + "' to '" + path + "': " + ec.message());
}

std::string fetch_url_model(const std::string& url, const CacheDirs& dirs, const DownloadOptions& o,
                            const Logger& log) {
  std::string clean = url.substr(0, url.find_first_of("?#"));
  const std::string name = clean.substr(clean.find_last_of('/') + 1);
  if (name.empty()) throw Error("-mu " + url + ": the URL names no file");
  const std::string path = dirs.llama + "/" + name;
  if (fs::exists(path)) {
    log.info("-mu: using the cached " + path);
    return path;
  }
  if (o.offline) throw Error("offline: -mu " + url + " is not in the cache: '" + path + "' does not exist");
  log.info("-mu: downloading " + url + " to " + path);
  download_file(url, path, o);
  return path;
}

void resolve_model_source(RunSettings& s, const Logger& log) {
  if (s.hf_repo.empty() && s.model_url.empty()) return;
  const EnvLookup env = nullptr;  // the process environment: this is the edge
  DownloadOptions o;
  o.endpoint = model_endpoint(env);
  o.offline = s.offline;
  o.token = s.hf_token;
  const CacheDirs dirs = cache_dirs(env);
  if (!s.hf_repo.empty()) {
    // As llama.cpp: with -hf, a -m value names the file in the repository.
    std::string file = s.hf_file.empty() ? s.model : s.hf_file;
    s.model = fetch_hf_model(s.hf_repo, file, dirs, o, log);
  } else {
    s.model = fetch_url_model(s.model_url, dirs, o, log);
  }
}

}  // namespace oscar::tools
