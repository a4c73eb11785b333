#include "engine.h"

#include "core/error.h"

namespace oscar::tools {

std::unique_ptr<Engine> Engine::load(const RunSettings& s, const Logger& log) {
  require(!s.model.empty(), "missing -m MODEL (see --help)");
  std::unique_ptr<Engine> e(new Engine());
  log.info("cpu: " + e->cpu_.describe());
  if (s.n_gpu_layers > 0)
    log.info("-ngl " + std::to_string(s.n_gpu_layers) + " ignored: this build has no GPU backend");
  e->model_ = model::Model::load(s.model, e->table_, log);
  e->tokenizer_ = std::make_unique<tok::Tokenizer>(tok::Tokenizer::from_metadata(e->model_->file().metadata()));
  e->pool_ = std::make_unique<ThreadPool>(s.n_threads);
  return e;
}

int Engine::context_size(const RunSettings& s) const {
  return s.n_ctx == 0 ? model_->config().n_ctx_train : s.n_ctx;
}

std::unique_ptr<kv::KvCache> Engine::make_cache(const RunSettings& s, int n_seq, int n_ctx_seq) const {
  kv::KvCacheConfig kc;
  kc.type_k = s.cache_k;
  kc.type_v = s.cache_v;
  kc.n_seq = n_seq;
  kc.n_ctx_seq = n_ctx_seq;
  return std::make_unique<kv::KvCache>(model_->config(), kc, table_);
}

}  // namespace oscar::tools
