#include "engine.h"

#include <algorithm>
#include <cstdio>

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

std::unique_ptr<kv::KvCache> Engine::make_cache(const RunSettings& s, int n_seq, int n_ctx_seq,
                                                int pool_positions) const {
  kv::KvCacheConfig cfg = kv_config(s, n_seq, n_ctx_seq);
  cfg.pool_positions = pool_positions;
  auto cache = std::make_unique<kv::KvCache>(model_->config(), cfg, table_);
  log_.info(cache->describe());
  if (pool_positions > 0) log_.info(describe_pool(*cache, cfg));
  return cache;
}

std::string Engine::describe_pool(const kv::KvCache& cache, const kv::KvCacheConfig& cfg) const {
  // What the same pool memory would hold in f16 and in q2_0 pages, so that
  // the choice of cache type can be weighed in positions.
  const auto& m = model_->config();
  const kv::KvCache::Footprint here = kv::KvCache::footprint(m, cfg, table_);
  const size_t pool_bytes = (size_t)cache.pool_positions() * here.bytes_per_position;
  auto positions_as = [&](kv::CacheType t) {
    kv::KvCacheConfig c = cfg;
    c.type_k = c.type_v = t;
    const size_t per = kv::KvCache::footprint(m, c, table_).bytes_per_position;
    return per > 0 ? (long long)(pool_bytes / per) : 0LL;
  };
  char buf[400];
  std::snprintf(buf, sizeof buf,
                "KV pool: %d positions x %zu bytes = %.1f MiB (+ %.1f MiB of per-slot f16 tiers and rings); "
                "this memory holds %lld positions as f16 or %lld as q2_0",
                cache.pool_positions(), here.bytes_per_position, (double)pool_bytes / (1 << 20),
                (double)here.fixed_bytes / (1 << 20), positions_as(kv::CacheType::F16),
                positions_as(kv::CacheType::Q2_0));
  return buf;
}

int Engine::pool_positions_for_memory(const RunSettings& s, int n_seq, int n_ctx_seq, size_t bytes) const {
  const kv::KvCacheConfig cfg = kv_config(s, n_seq, n_ctx_seq);
  const kv::KvCache::Footprint f = kv::KvCache::footprint(model_->config(), cfg, table_);
  const size_t per_page = f.bytes_per_position * (size_t)cfg.page_positions;
  require(per_page > 0 && bytes > f.fixed_bytes + per_page, [&] {
    return "--kv-memory " + std::to_string(bytes >> 20) + " MiB does not hold one page of " +
           std::to_string(cfg.page_positions) + " positions after the " + std::to_string(f.fixed_bytes >> 20) +
           " MiB of per-slot tiers";
  });
  const size_t pages = std::min<size_t>((bytes - f.fixed_bytes) / per_page, (size_t)(1 << 30) / cfg.page_positions);
  return (int)pages * cfg.page_positions;
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
