// Everything the route handlers share: settings, the loaded model's pieces
// (tokenizer, chat template, scheduler) once loading is done, and the HTTP
// counters. The model half is published once, before ready() turns true;
// after that it is read-only, so handlers read it without locks.
#pragma once

#include <atomic>
#include <memory>
#include <string>

#include <nlohmann/json.hpp>

#include "chat/chat_output_parser.h"
#include "chat/chat_template.h"
#include "grammar/grammar_cache.h"
#include "server/cache_tiers.h"
#include "server/metrics.h"
#include "server/request_parse.h"
#include "server/scheduler.h"
#include "server/server_settings.h"
#include "server/slot_file.h"
#include "server/task.h"
#include "tokenizer/tokenizer.h"

namespace oscar::server {

class Embedder;

struct LoadedModel {
  const tok::Tokenizer* tokenizer = nullptr;
  Embedder* embedder = nullptr;  // with --embedding; null otherwise
  Scheduler* scheduler = nullptr;
  std::string path;
  std::string arch;
  int n_vocab = 0;
  int n_ctx_train = 0;
  int n_embd = 0;
  int n_layer = 0;
  long long file_bytes = 0;
  std::string kv_description;
  const kv::KvCache* kv_cache = nullptr;  // its layout (config, stores) never changes after start-up
  std::string kv_rotations;              // calibrated | hadamard | none
  SlotIdentity slot_identity;            // what a saved slot must match to be restored here (slot_identity.h)
  CacheTierReport kv_tiers;  // shown in /props and /slots (with a warning when the 2-bit tier is unusable)
  std::string template_source;  // the model's or --chat-template-file's; ChatML when neither
  std::unique_ptr<chat::ChatTemplate> tmpl;
  chat::ChatOutputFormat output_format;
};

class ServerContext {
 public:
  ServerContext(ServerSettings settings, GenParams defaults)
      : settings_(std::move(settings)), defaults_(std::move(defaults)) {}

  const ServerSettings& settings() const { return settings_; }
  const GenParams& defaults() const { return defaults_; }
  const std::string& alias() const { return alias_; }

  void publish(std::unique_ptr<LoadedModel> m);
  bool ready() const { return ready_.load(std::memory_order_acquire); }
  const LoadedModel& model() const { return *model_; }

  // Shutting down: new generation requests get 503; running ones finish.
  void begin_drain() { draining_.store(true); }
  bool draining() const { return draining_.load(); }

  HttpCounters counters;
  std::atomic<int> in_flight{0};  // generation handlers running
  grammar::GrammarCache grammar_cache;  // compiled request grammars/schemas, shared across requests

  // Chat request -> rendered prompt (template errors become 400s).
  std::string render_chat(const ChatRequest& r) const;
  // Tokenizes a prompt and checks it fits a slot (400 with the numbers if not).
  std::vector<int32_t> tokenize_prompt(const std::string& text, bool add_special) const;
  void check_prompt_fits(size_t n_prompt) const;
  Json props() const;
  Json kv_json() const;  // GET /props "kv" (null before a cache is published)
  Json generation_settings(const GenParams& p) const;

 private:
  ServerSettings settings_;
  GenParams defaults_;
  std::string alias_;
  std::unique_ptr<LoadedModel> model_;
  std::atomic<bool> ready_{false};
  std::atomic<bool> draining_{false};
};

// ChatML, used when a model has no chat template (llama-server does the same).
const char* chatml_template();

}  // namespace oscar::server
