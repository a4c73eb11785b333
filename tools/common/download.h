// Models by name, as llama.cpp fetches them: -hf user/repo[:quant] from a
// Hugging Face-style server into the Hugging Face cache layout
// (models--user--repo/{refs,blobs,snapshots}), -mu URL into llama.cpp's
// cache folder. Downloads resume (HTTP Range into FILE.downloadInProgress),
// are checked against the repository's SHA-256 when it gives one, show a
// progress bar on a terminal, and are found again without a network;
// offline, nothing touches the network.
#pragma once

#include <cstddef>
#include <functional>
#include <string>
#include <vector>

#include "core/log.h"
#include "flag_table.h"
#include "run_settings.h"

namespace oscar::tools {

struct CacheDirs {
  std::string llama;   // -mu files: LLAMA_CACHE, else XDG_CACHE_HOME/llama.cpp, else ~/.cache/llama.cpp
  std::string hf_hub;  // -hf repos: LLAMA_CACHE, HF_HUB_CACHE, HUGGINGFACE_HUB_CACHE, HF_HOME/hub,
                       // XDG_CACHE_HOME/huggingface/hub, else ~/.cache/huggingface/hub
};
CacheDirs cache_dirs(const EnvLookup& env);

// MODEL_ENDPOINT, else HF_ENDPOINT, else https://huggingface.co/ (with a trailing slash).
std::string model_endpoint(const EnvLookup& env);

struct DownloadOptions {
  std::string endpoint = "https://huggingface.co/";
  std::string token;         // Authorization: Bearer (HF_TOKEN / -hft)
  bool offline = false;
  int attempts = 3;          // tries per file; each resumes where the last stopped
  int retry_delay_ms = 1000; // before the 2nd try, doubling after
  // Bytes so far and the total (0 when unknown); the tool draws a bar with it.
  std::function<void(size_t done, size_t total)> progress;
};

// Downloads url to path unless path exists. Partial data lives in
// path + ".downloadInProgress" and is resumed with a Range request. A
// non-empty sha256 (hex) is checked before the file is moved into place;
// a mismatch removes the partial file and throws Error.
void download_file(const std::string& url, const std::string& path, const DownloadOptions& o,
                   const std::string& sha256 = "");

// -hf repo[:quant] (+ -hff file): the local path of the model's (first) file.
std::string fetch_hf_model(const std::string& repo_and_quant, const std::string& hf_file, const CacheDirs& dirs,
                           const DownloadOptions& o, const Logger& log);

// -mu url: the local path in dirs.llama (file name: the URL's last segment).
std::string fetch_url_model(const std::string& url, const CacheDirs& dirs, const DownloadOptions& o,
                            const Logger& log);

// The edge: reads the environment, and with -hf or -mu sets s.model to the
// cached file (downloading it first unless --offline). Nothing when neither is given.
void resolve_model_source(RunSettings& s, const Logger& log);

// "user/repo:file" for every model file in the Hugging Face cache, and the
// .gguf files of the llama.cpp cache folder (for --cache-list).
std::vector<std::string> list_cached_models();

// Lowercase hex SHA-256 of a file (throws Error when it cannot be read).
std::string sha256_file(const std::string& path);

}  // namespace oscar::tools
