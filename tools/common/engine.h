// What every tool sets up from its settings: CPU features, the quant table,
// the model, its tokenizer, the thread pool, and KV caches on request.
// Heap-allocated and non-movable because the model points into the table.
#pragma once

#include <memory>

#include "core/cpu_features.h"
#include "core/log.h"
#include "core/thread_pool.h"
#include "kv/kv_cache.h"
#include "model/model.h"
#include "quant/quant.h"
#include "run_settings.h"
#include "runtime/forward.h"
#include "tokenizer/tokenizer.h"

namespace oscar::tools {

class Engine {
 public:
  // Loads s.model (throws Error when absent or invalid).
  static std::unique_ptr<Engine> load(const RunSettings& s, const Logger& log);
  Engine(const Engine&) = delete;
  Engine& operator=(const Engine&) = delete;

  const CpuFeatures& cpu() const { return cpu_; }
  const quant::QuantTable& quant_table() const { return table_; }
  const model::Model& model() const { return *model_; }
  const tok::Tokenizer& tokenizer() const { return *tokenizer_; }
  ThreadPool& pool() { return *pool_; }

  // The context size the settings ask for (-c 0: the model's).
  int context_size(const RunSettings& s) const;
  // A cache for the settings (logs its layout and bits per value), and the
  // forward options (rotation mode, fused or reference attention) to use it with.
  // pool_positions > 0: one shared page pool of that many positions (a
  // unified cache), whose size in bytes and in f16 / q2_0 positions is logged.
  std::unique_ptr<kv::KvCache> make_cache(const RunSettings& s, int n_seq, int n_ctx_seq,
                                          int pool_positions = 0) const;
  // The pool positions that fit in `bytes` of KV memory (the fixed tiers and
  // rings of n_seq sequences taken off first); throws Error when none do.
  int pool_positions_for_memory(const RunSettings& s, int n_seq, int n_ctx_seq, size_t bytes) const;
  runtime::ForwardOptions forward_options(const RunSettings& s);
  // oscar-server's sleep (model::Model::release_weights / restore_weights).
  void release_weights() { model_->release_weights(); }
  void restore_weights() { model_->restore_weights(); }

 private:
  std::string describe_pool(const kv::KvCache& cache, const kv::KvCacheConfig& cfg) const;
  explicit Engine(const Logger& log) : cpu_(detect_cpu()), table_(cpu_), log_(log) {}
  CpuFeatures cpu_;
  quant::QuantTable table_;
  std::unique_ptr<model::Model> model_;
  std::unique_ptr<tok::Tokenizer> tokenizer_;
  std::unique_ptr<ThreadPool> pool_;
  std::unique_ptr<runtime::RotationPlan> rotations_;
  Logger log_;
};

}  // namespace oscar::tools
