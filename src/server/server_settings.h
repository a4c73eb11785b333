// What oscar-server is told at start-up beyond the model settings: where to
// listen, how many slots, keys, limits. Filled by the tool's flag parser.
#pragma once

#include <cstddef>
#include <string>
#include <vector>

namespace oscar::server {

struct ServerSettings {
  std::string host = "127.0.0.1";
  int port = 8080;
  int n_parallel = 4;              // slots (-np); -c is divided among them
  std::vector<std::string> api_keys;
  int timeout_s = 600;             // socket read/write timeout
  std::string alias;               // model name reported by the API (-a)
  bool metrics = false;            // GET /metrics enabled
  int threads_http = -1;           // HTTP worker threads (-1: enough for the slots)
  size_t max_body_bytes = 16u << 20;
  bool slots_endpoint = true;      // GET /slots
  std::string reasoning_format = "deepseek";  // none | deepseek
  bool embeddings = false;         // --embedding: serve /v1/embeddings, /embedding(s)
  int n_batch = 2048;              // logical batch (-b): /infill sizes prefix and suffix by it
  bool spm_infill = false;         // --spm-infill: suffix-prefix-middle order
  std::string pooling;             // --pooling none|mean|cls|last|rank (empty: the model's, else last)
};

}  // namespace oscar::server
