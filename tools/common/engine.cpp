#include "engine.h"

#include "core/error.h"

namespace oscar::tools {

std::unique_ptr<Engine> Engine::load(const RunSettings& s, const Logger& log) {
  require(!s.model.empty(), "missing -m MODEL (see --help)");
  std::unique_ptr<Engine> e(new Engine(log));
  log.info("cpu: " + e->cpu_.describe());
  // Flags accepted for llama.cpp compatibility that do nothing here: one line each.
  for (const std::string& note : s.flag_notes) log.info(note);
  e->model_ = model::Model::load(s.model, e->table_, log,
                                 s.use_mmap ? FileResidence::kMapped : FileResidence::kLoaded);
  e->tokenizer_ = std::make_unique<tok::Tokenizer>(tok::Tokenizer::from_metadata(e->model_->file().metadata()));
  e->pool_ = std::make_unique<ThreadPool>(s.n_threads);
  return e;
}

int Engine::context_size(const RunSettings& s) const {
  return s.n_ctx == 0 ? model_->config().n_ctx_train : s.n_ctx;
}

std::unique_ptr<kv::KvCache> Engine::make_cache(const RunSettings& s, int n_seq, int n_ctx_seq) const {
  auto cache = std::make_unique<kv::KvCache>(model_->config(), kv_config(s, n_seq, n_ctx_seq), table_);
  log_.info(cache->describe());
  return cache;
}

runtime::ForwardOptions Engine::forward_options(const RunSettings& s) {
  if (!rotations_) {
    const bool q2 = s.cache_k == kv::CacheType::Q2_0 || s.cache_v == kv::CacheType::Q2_0;
    rotations_ = std::make_unique<runtime::RotationPlan>(runtime::RotationPlan::make(*model_, q2, s.kv_no_hadamard));
    log_.info(rotations_->reason);
    log_.info(std::string("attention: ") + (s.kv_fused ? "fused" : "reference (LLAMA_KV_FUSED_FA=0)"));
  }
  runtime::ForwardOptions o;
  o.rotations = rotations_.get();
  o.fused_attention = s.kv_fused;
  return o;
}

}  // namespace oscar::tools
