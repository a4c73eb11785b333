// The model's final hidden states for embedding requests. It has its own
// Forward, one-sequence KV cache and thread pool, so it runs on the HTTP
// thread that asks, beside the scheduler (which owns the generation
// Forward and its pool); a mutex lets one request at a time through.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <vector>

#include "core/thread_pool.h"
#include "kv/kv_cache.h"
#include "model/model.h"
#include "runtime/forward.h"
#include "server/embeddings_pooling.h"

namespace oscar::server {

class Embedder {
 public:
  // `cache`: one sequence; its capacity is the longest input accepted.
  Embedder(const model::Model& model, std::unique_ptr<kv::KvCache> cache, runtime::ForwardOptions opts,
           int n_threads, int n_ubatch, Pooling pooling);

  Pooling pooling() const { return pooling_; }
  int n_embd() const { return fwd_->n_embd(); }
  int capacity() const { return cache_->capacity(); }

  // (tokens.size(), n_embd) final hidden states after the output norm, the
  // input evaluated causally from position 0 in n_ubatch chunks.
  std::vector<float> hidden_states(const std::vector<int32_t>& tokens);
  // Called before each use of the weights; the guard it returns is held
  // until the use ends (oscar-server: Scheduler::keep_awake, so that
  // --sleep-idle-seconds neither sleeps under an embedding nor leaves one
  // reading weights that were given back).
  void set_keep_awake(std::function<std::shared_ptr<void>()> f) { keep_awake_ = std::move(f); }

 private:
  std::unique_ptr<kv::KvCache> cache_;
  ThreadPool pool_;
  std::unique_ptr<runtime::Forward> fwd_;
  int n_ubatch_;
  Pooling pooling_;
  std::mutex m_;
  std::function<std::shared_ptr<void>()> keep_awake_;
};

// The pooling a model is served with: the --pooling flag when given, else
// the GGUF's {arch}.pooling_type, else (a generative model) the last token.
Pooling resolve_pooling(const model::Model& model, const std::string& flag);

}  // namespace oscar::server
