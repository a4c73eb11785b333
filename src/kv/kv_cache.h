// The KV cache: per layer a TierStore for K and one for V (types chosen
// separately), for n_seq independent sequences of up to n_ctx_seq positions
// each. Quantized types keep the first `sink` and the last `recent` positions
// of every sequence in f16 (OSCAR's high-precision tiers).
//
// The global layers' main tiers are paged (page_table.h): one pool of
// pool_positions positions serves all sequences (a unified cache, as
// llama-server's --kv-unified), each taking pages as it grows. Without a
// pool size every sequence gets n_ctx_seq positions of its own (split).
//
// Sliding-window layers keep only a ring of window + swa_slack positions,
// in their own types (f16 by default: the whole window would sit in the f16
// recent tier anyway). The slack lets a sequence be cut back by up to that
// many positions without losing rows its next token needs. Layers that
// share another layer's KV (Gemma 4) have no store of their own: k_store()
// and v_store() give the shared one.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "kv/cache_type.h"
#include "kv/tier_store.h"
#include "model/model_config.h"
#include "quant/quant.h"

namespace oscar::kv {

struct KvCacheConfig {
  CacheType type_k = CacheType::F16;
  CacheType type_v = CacheType::F16;
  int n_seq = 1;      // independent sequences (server slots)
  int n_ctx_seq = 0;  // positions per sequence
  int hp_sink = 0;    // f16 sink tier (quantized types only)
  int hp_recent = 0;  // f16 recent tier (quantized types only)
  Q2Params q2_k;      // clipping / group size of q2_0 K rows
  Q2Params q2_v;
  // Types of the sliding-window layers; unset: the main type when it is a
  // float type, else f16.
  std::optional<CacheType> type_k_swa, type_v_swa;
  int swa_slack = 512;  // ring positions beyond the window (see above)
  // Positions of the shared pool (rounded up to whole pages); 0: split, each
  // sequence n_ctx_seq positions of its own.
  int pool_positions = 0;
  int page_positions = 256;  // positions per page of the pool (split: one page per sequence, no rounding)
};

class KvCache {
 public:
  KvCache(const model::ModelConfig& model, const KvCacheConfig& cfg, const quant::QuantTable& table);

  // What a cache of this configuration costs, without allocating it: bytes
  // that do not depend on the pool (sink and recent tiers, sliding rings) and
  // bytes per pool position (K + V of every paged store).
  struct Footprint {
    size_t fixed_bytes = 0;
    size_t bytes_per_position = 0;
  };
  static Footprint footprint(const model::ModelConfig& model, const KvCacheConfig& cfg,
                             const quant::QuantTable& table);

  const KvCacheConfig& config() const { return cfg_; }
  int n_seq() const { return cfg_.n_seq; }
  int capacity() const { return cfg_.n_ctx_seq; }
  int n_pos(int seq) const;  // positions stored for seq: 0 .. n-1

  // Stores K and V of one position (k, v: (n_head_kv, head_dim) f32, already
  // rotated). Positions of a sequence must be appended in order. A layer
  // that shares another's KV has nothing to store (Error).
  void store(int seq, int layer, int pos, const float* k, const float* v);
  void commit(int seq, int n_pos);  // n_pos(seq) = n_pos after a batch
  // Takes the pages seq needs to hold positions [0, n_pos), and makes the
  // pages it will write from now on its own (copy-on-write of a shared
  // page); false (nothing taken) when the pool is short. store() needs them
  // in place.
  bool reserve(int seq, int n_pos);
  // Shared prompt prefixes (docs/kv-pool.md). Gives empty sequence dst
  // src's first n positions as src holds them: the pages whose main-tier
  // rows src will not write again are shared (one more reference), a page
  // src may still write is copied, the per-sequence f16 sink / recent rows
  // and sliding rings are copied. dst's cache then equals src's truncated
  // to n. Returns the positions dst got: n, fewer (a page boundary) when the
  // pool has no free page for a copy, or 0 when a sliding window's ring no
  // longer holds what position n needs. Unified pools only.
  int share_prefix(int dst, int src, int n);
  // Pages of src a share_prefix(·, src, n) would list without copying.
  int shareable_pages(int src, int n) const;
  // The first position whose main-tier rows seq may still write (over every
  // paged store): rows below it are final until seq is truncated.
  int main_write_start(int seq) const;
  const PageTable& pages() const { return *pages_; }
  bool unified() const { return !pages_->fixed(); }
  int pool_positions() const { return pages_->n_pages() * pages_->page_positions(); }
  int free_positions() const { return pages_->free_pages() * pages_->page_positions(); }

  const TierStore& k_store(int layer) const { return *k_[(size_t)src_[(size_t)layer]]; }
  const TierStore& v_store(int layer) const { return *v_[(size_t)src_[(size_t)layer]]; }
  bool has_own_store(int layer) const { return src_[(size_t)layer] == layer; }
  int n_layers() const { return (int)src_.size(); }
  // Writable stores, for restoring a saved sequence (seq_snapshot.h) only.
  TierStore& k_store_mut(int layer) { return *k_[(size_t)src_[(size_t)layer]]; }
  TierStore& v_store_mut(int layer) { return *v_[(size_t)src_[(size_t)layer]]; }
  int window(int layer) const { return window_[(size_t)layer]; }  // 0: global layer
  void read_k(int seq, int layer, int head, int pos, float* out) const;
  void read_v(int seq, int layer, int head, int pos, float* out) const;

  void clear(int seq);
  // oscar-server's sleep: with every sequence empty, the rows' memory goes
  // back to the system; restore_memory() commits it again before the next
  // write (Error if a sequence still holds positions).
  void release_memory();
  void restore_memory();
  // Keeps positions [0, n_keep) of seq and returns how many are kept: n_keep,
  // or 0 (the sequence is cleared) when a sliding-window ring has already
  // overwritten rows the token at n_keep would need.
  int truncate(int seq, int n_keep);

  size_t bytes_allocated() const;
  // Bytes of main-tier rows that usage() counts for more than one sequence
  // because they sit in shared pages (stored once): subtract them from the
  // sum of the sequences' usage to get what the pool holds.
  size_t shared_bytes() const;
  // Bits per cached value for n positions of one sequence, with each
  // position in the tier it would occupy (the "effective" rate), and per tier.
  struct Usage {
    double bits_per_value = 0;     // all tiers together
    double main_bits_per_value = 0; // the main tier of the global layers alone (2.25 for q2_0 at d=128)
    long long sink_cells = 0, main_cells = 0, recent_cells = 0;  // positions x global layers (K)
    long long ring_cells = 0;  // positions x sliding-window layers (K), as held in their rings
    size_t bytes = 0;              // bytes those positions occupy (K + V)
  };
  Usage usage(int seq) const;
  std::string describe() const;  // one line for the start-up log

 private:
  void check_seq(int seq) const;
  // Whether every sliding ring of seq still holds what position n reads.
  bool rings_hold(int seq, int n) const;
  void copy_page_rows(int from, int to);  // every paged store's rows of one pool page
  // allocate false: stores without rows, only to measure them (footprint()).
  KvCache(const model::ModelConfig& model, const KvCacheConfig& cfg, const quant::QuantTable& table, bool allocate);
  KvCacheConfig cfg_;
  std::unique_ptr<PageTable> pages_;  // of every global layer's main tier
  HugePageBuffer rows_;  // the rows of every store below
  std::vector<std::unique_ptr<TierStore>> k_, v_;  // null for shared-KV layers
  std::vector<int> src_;     // per layer: the layer whose stores it uses
  std::vector<int> window_;  // per layer: sliding window (0: none)
  std::vector<int> head_dim_, n_head_kv_;
  std::vector<int> n_pos_;
};

}  // namespace oscar::kv
