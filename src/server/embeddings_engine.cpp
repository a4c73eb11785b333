#include "server/embeddings_engine.h"

#include <algorithm>

#include "core/error.h"

namespace oscar::server {

Embedder::Embedder(const model::Model& model, std::unique_ptr<kv::KvCache> cache, runtime::ForwardOptions opts,
                   int n_threads, int n_ubatch, Pooling pooling)
    : cache_(std::move(cache)), pool_(n_threads), n_ubatch_(std::max(1, n_ubatch)), pooling_(pooling) {
  opts.observer = nullptr;
  opts.profile = nullptr;
  fwd_ = std::make_unique<runtime::Forward>(model, *cache_, pool_, opts);
}

std::vector<float> Embedder::hidden_states(const std::vector<int32_t>& tokens) {
  const std::shared_ptr<void> awake = keep_awake_ ? keep_awake_() : nullptr;
  std::lock_guard<std::mutex> lock(m_);
  const size_t E = (size_t)fwd_->n_embd();
  std::vector<float> out(tokens.size() * E);
  cache_->clear(0);
  std::vector<runtime::BatchToken> batch;
  for (size_t b = 0; b < tokens.size(); b += (size_t)n_ubatch_) {
    const size_t e = std::min(tokens.size(), b + (size_t)n_ubatch_);
    batch.clear();
    for (size_t i = b; i < e; ++i) batch.push_back({tokens[i], 0, (int32_t)i, false});
    fwd_->eval(batch);
    for (size_t i = b; i < e; ++i) fwd_->output_hidden((int)(i - b), &out[i * E]);
  }
  cache_->clear(0);
  return out;
}

Pooling resolve_pooling(const model::Model& model, const std::string& flag) {
  if (!flag.empty()) {
    const auto p = pooling_from_name(flag);
    require(p.has_value(), "--pooling: expected none, mean, cls, last or rank, got '" + flag + "'");
    return *p;
  }
  if (const gguf::Value* v = model.file().find(model.config().arch + ".pooling_type")) {
    const auto u = v->as_uint();
    require(u && *u <= 4, model.config().arch + ".pooling_type: not a pooling type (0..4)");
    return (Pooling)*u;
  }
  return Pooling::Last;
}

}  // namespace oscar::server
