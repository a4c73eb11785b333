// What oscar-server is told at start-up beyond the model settings: where to
// listen, how many slots, keys, limits. Filled by the tool's flag parser.
#pragma once

#include <cstddef>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace oscar::server {

struct ServerSettings {
  std::string host = "127.0.0.1";
  int port = 8080;
  int n_parallel = 4;              // slots (-np): sequences decoded together
  bool n_parallel_given = false;   // -np N (N > 0) on the command line
  bool kv_unified = true;          // one KV pool of -c positions for all slots (else -c / -np each)
  bool kv_unified_given = false;   // --kv-unified / --no-kv-unified on the command line
  size_t kv_memory_bytes = 0;      // --kv-memory: size the pool by bytes instead of -c (0: by -c)
  std::vector<std::string> api_keys;
  int timeout_s = 600;             // generation: response write timeout, shutdown drain limit
  int read_timeout_s = 10;         // a request's head and body must arrive within this (http_server.h)
  std::string alias;               // model name reported by the API (-a)
  bool metrics = false;            // GET /metrics enabled
  int threads_http = -1;           // HTTP worker threads (-1: enough for the slots)
  size_t max_body_bytes = 16u << 20;
  bool slots_endpoint = true;      // GET /slots
  std::string reasoning_format = "deepseek";  // none | deepseek
  bool webui = true;               // serve the chat page at / (--no-webui: 404 as llama-server)
  std::string webui_path;          // --path DIR: serve this folder at / instead of the built-in page
  std::vector<std::string> tags;   // --tags: informational, listed in /v1/models
  bool props_endpoint = false;     // --props: POST /props allowed
  bool verbose = false;            // -v: responses carry llama-server's __verbose object
  bool seed_given = false;         // --seed: requests without a seed use the defaults' seed
  bool context_shift = false;      // --context-shift: a full context drops tokens and goes on
  int cache_ram_mib = 8192;        // -cram: host-memory prompt cache limit (-1: none, 0: off)
  int sleep_idle_seconds = -1;     // --sleep-idle-seconds: idle time before memory is given back (-1: never)
  std::string slot_save_path;      // --slot-save-path: folder of saved slots ("" disabled)
  bool prefill_assistant = true;   // --no-prefill-assistant: a final assistant message is a full turn
  bool skip_chat_parsing = false;  // --skip-chat-parsing: all output stays in content
  std::string ssl_key_file, ssl_cert_file;  // both set: serve HTTPS
  // Template variables every chat request starts from (--chat-template-kwargs,
  // --reasoning off, --reasoning-budget 0); a JSON object.
  nlohmann::ordered_json default_template_kwargs = nlohmann::ordered_json::object();
  bool embeddings = false;         // --embedding: serve /v1/embeddings, /embedding(s)
  int n_batch = 2048;              // logical batch (-b): /infill sizes prefix and suffix by it
  bool spm_infill = false;         // --spm-infill: suffix-prefix-middle order
  std::string pooling;             // --pooling none|mean|cls|last|rank (empty: the model's, else last)
};

}  // namespace oscar::server
