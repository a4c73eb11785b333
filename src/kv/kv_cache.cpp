#include "kv/kv_cache.h"

#include <algorithm>
#include <cstdio>

#include "core/error.h"

namespace oscar::kv {

KvCache::KvCache(const model::ModelConfig& model, const KvCacheConfig& cfg, const quant::QuantTable& table)
    : KvCache(model, cfg, table, true) {}

KvCache::Footprint KvCache::footprint(const model::ModelConfig& model, const KvCacheConfig& cfg,
                                      const quant::QuantTable& table) {
  // Measured on the stores themselves: one page of pool and two.
  KvCacheConfig c = cfg;
  c.pool_positions = c.page_positions;
  const size_t one = KvCache(model, c, table, false).bytes_allocated();
  c.pool_positions = 2 * c.page_positions;
  const size_t two = KvCache(model, c, table, false).bytes_allocated();
  Footprint f;
  f.bytes_per_position = (two - one) / (size_t)c.page_positions;
  f.fixed_bytes = one - (two - one);
  return f;
}

KvCache::KvCache(const model::ModelConfig& model, const KvCacheConfig& cfg, const quant::QuantTable& table,
                 bool allocate)
    : cfg_(cfg) {
  require(cfg.n_seq >= 1, "KV cache: need at least one sequence");
  require(cfg.n_ctx_seq >= 1, "KV cache: context per sequence must be positive");
  require(cfg.hp_sink >= 0 && cfg.hp_recent >= 0, "KV cache: tier sizes must not be negative");
  require(cfg.swa_slack >= 0, "KV cache: sliding-window slack must not be negative");
  require(cfg.page_positions >= 1 && cfg.pool_positions >= 0, "KV cache: invalid pool or page size");
  n_pos_.assign((size_t)cfg.n_seq, 0);
  const int page = cfg.page_positions;
  pages_ = std::make_unique<PageTable>(
      cfg.pool_positions > 0
          ? PageTable(cfg.n_seq, page, (int)(((long long)cfg.pool_positions + page - 1) / page), cfg.n_ctx_seq)
          : PageTable::contiguous(cfg.n_seq, cfg.n_ctx_seq, cfg.n_ctx_seq));  // split: one page per sequence
#if defined(__SANITIZE_ADDRESS__)
  // A heap block per store, so that AddressSanitizer sees a read past one
  // store's rows (in a shared buffer it would land in the next store's).
  const RowMemory placed = allocate ? RowMemory::kOwn : RowMemory::kPlaced;
#else
  constexpr RowMemory placed = RowMemory::kPlaced;
#endif
  auto swa_type = [](std::optional<CacheType> t, CacheType main) {
    if (t) return *t;
    return is_quantized(main) ? CacheType::F16 : main;
  };
  const CacheType swa_k = swa_type(cfg.type_k_swa, cfg.type_k), swa_v = swa_type(cfg.type_v_swa, cfg.type_v);
  for (int il = 0; il < (int)model.layers.size(); ++il) {
    const auto& l = model.layers[(size_t)il];
    head_dim_.push_back(l.head_dim);
    n_head_kv_.push_back(l.n_head_kv);
    window_.push_back(l.sliding_window);
    if (!l.has_own_kv(il)) {
      require(l.kv_layer >= 0 && l.kv_layer < il, "KV cache: layer " + std::to_string(il) +
                                                      " shares the KV of a layer that is not before it");
      src_.push_back(l.kv_layer);
      k_.push_back(nullptr);
      v_.push_back(nullptr);
      continue;
    }
    src_.push_back(il);
    const RowCodec f16(CacheType::F16, l.head_dim, table, {});
    if (l.sliding_window > 0) {
      const int ring = (int)std::min<long long>(cfg.n_ctx_seq, (long long)l.sliding_window + cfg.swa_slack);
      const RowCodec ck(swa_k, l.head_dim, table, cfg.q2_k), cv(swa_v, l.head_dim, table, cfg.q2_v);
      k_.push_back(std::make_unique<TierStore>(ck, f16, cfg.n_seq, l.n_head_kv, cfg.n_ctx_seq, 0, 0, ring, placed));
      v_.push_back(std::make_unique<TierStore>(cv, f16, cfg.n_seq, l.n_head_kv, cfg.n_ctx_seq, 0, 0, ring, placed));
      continue;
    }
    const RowCodec ck(cfg.type_k, l.head_dim, table, cfg.q2_k), cv(cfg.type_v, l.head_dim, table, cfg.q2_v);
    k_.push_back(std::make_unique<TierStore>(ck, f16, cfg.n_seq, l.n_head_kv, cfg.n_ctx_seq, cfg.hp_sink,
                                             cfg.hp_recent, 0, placed, pages_.get()));
    v_.push_back(std::make_unique<TierStore>(cv, f16, cfg.n_seq, l.n_head_kv, cfg.n_ctx_seq, cfg.hp_sink,
                                             cfg.hp_recent, 0, placed, pages_.get()));
  }
  require(!k_.empty(), "KV cache: the model has no layers");
  // Every store's rows in one buffer, back to back (each store's size is a
  // whole number of cache lines), so huge-page rounding is paid once.
  if (placed == RowMemory::kOwn || !allocate) return;
  rows_ = allocate_kv_rows(bytes_allocated());
  uint8_t* next = rows_.data();
  for (auto* stores : {&k_, &v_})
    for (auto& s : *stores)
      if (s) {
        s->place(next);
        next += s->bytes_allocated();
      }
}

void KvCache::check_seq(int seq) const {
  require(seq >= 0 && seq < cfg_.n_seq, [&] {
    return "KV cache: sequence id " + std::to_string(seq) + " out of range [0, " +
           std::to_string(cfg_.n_seq) + ")";
  });
}

int KvCache::n_pos(int seq) const {
  check_seq(seq);
  return n_pos_[(size_t)seq];
}

void KvCache::store(int seq, int layer, int pos, const float* k, const float* v) {
  check_seq(seq);
  require(pos >= 0 && pos < cfg_.n_ctx_seq, [&] {
    return "KV cache: position " + std::to_string(pos) + " exceeds the context of " +
           std::to_string(cfg_.n_ctx_seq) + " per sequence";
  });
  require(layer >= 0 && layer < (int)k_.size() && k_[(size_t)layer],
          [&] { return "KV cache: layer " + std::to_string(layer) + " has no KV of its own to store"; });
  require(pos < pages_->pages_held(seq) * pages_->page_positions(), [&] {
    return "KV cache: position " + std::to_string(pos) + " of sequence " + std::to_string(seq) +
           " has no page (reserve() it first)";
  });
  k_[(size_t)layer]->store(seq, pos, k);
  v_[(size_t)layer]->store(seq, pos, v);
}

void KvCache::commit(int seq, int n_pos) {
  check_seq(seq);
  require(n_pos >= 0 && n_pos <= cfg_.n_ctx_seq, "KV cache: commit beyond capacity");
  n_pos_[(size_t)seq] = n_pos;
}

int KvCache::main_write_start(int seq) const {
  check_seq(seq);
  const int n = n_pos_[(size_t)seq];
  int w = n;
  for (size_t l = 0; l < k_.size(); ++l)
    if (k_[l] && window_[l] == 0) w = std::min({w, k_[l]->main_write_start(seq, n), v_[l]->main_write_start(seq, n)});
  return w;
}

bool KvCache::reserve(int seq, int n_pos) {
  check_seq(seq);
  PageTable& pt = *pages_;
  if (pt.fixed()) return pt.ensure(seq, n_pos);
  // Copy-on-write: every page from the one holding the first writable
  // position on must be seq's own before the batch stores into it. One check
  // per page per batch; the attention never sees the difference.
  const int first = main_write_start(seq) / pt.page_positions();
  int copies = 0;
  for (int i = first; i < pt.pages_held(seq); ++i) copies += pt.shared(seq, i) ? 1 : 0;
  const int grow = std::max(0, pt.pages_for(n_pos) - pt.pages_held(seq));
  if (copies + grow > pt.free_pages()) return false;
  for (int i = first; i < pt.pages_held(seq); ++i) {
    const int from = pt.make_private(seq, i);
    if (from >= 0) copy_page_rows(from, pt.pages(seq)[(size_t)i]);
  }
  return pt.ensure(seq, n_pos);
}

void KvCache::copy_page_rows(int from, int to) {
  for (size_t l = 0; l < k_.size(); ++l)
    if (k_[l] && window_[l] == 0) {
      k_[l]->copy_page(from, to);
      v_[l]->copy_page(from, to);
    }
}

int KvCache::shareable_pages(int src, int n) const {
  check_seq(src);
  if (pages_->fixed()) return 0;
  n = std::min(n, n_pos_[(size_t)src]);
  return std::max(0, std::min(n, main_write_start(src))) / pages_->page_positions();
}

bool KvCache::rings_hold(int seq, int n) const {
  // As truncate(): the token at n reads (n - window, n) of a sliding layer.
  for (size_t l = 0; l < k_.size(); ++l) {
    if (!k_[l] || window_[l] == 0) continue;
    const int need = std::max(0, n - window_[l] + 1);
    if (std::min(k_[l]->first_valid(seq), n) > need || std::min(v_[l]->first_valid(seq), n) > need) return false;
  }
  return true;
}

int KvCache::share_prefix(int dst, int src, int n) {
  check_seq(dst);
  check_seq(src);
  require(dst != src && unified(), "KV cache: prefix sharing needs two sequences of a unified pool");
  require(n_pos_[(size_t)dst] == 0 && pages_->pages_held(dst) == 0, "KV cache: prefix sharing needs an empty sequence");
  PageTable& pt = *pages_;
  const int P = pt.page_positions();
  n = std::max(0, std::min(n, n_pos_[(size_t)src]));
  const int shared = shareable_pages(src, n);
  // Pages past the shared ones are dst's own; short of free pages, keep only
  // the shared ones (the rest is recomputed).
  if (pt.pages_for(n) - shared > pt.free_pages()) n = shared * P;
  if (n == 0 || !rings_hold(src, n)) return 0;
  // Pages holding main-tier rows src may still write are copied whole.
  int main_end = 0;
  for (size_t l = 0; l < k_.size(); ++l)
    if (k_[l] && window_[l] == 0)
      main_end = std::max({main_end, k_[l]->main_end(src, n_pos_[(size_t)src]), v_[l]->main_end(src, n_pos_[(size_t)src])});
  const int copied_end = pt.pages_for(std::min(n, main_end));
  pt.share(dst, src, shared);
  require(pt.ensure(dst, n), "KV cache: pool pages vanished while sharing a prefix");
  for (int i = shared; i < copied_end; ++i) copy_page_rows(pt.pages(src)[(size_t)i], pt.pages(dst)[(size_t)i]);
  for (auto* stores : {&k_, &v_})
    for (auto& s : *stores)
      if (s) s->copy_unpaged(dst, src, n);
  n_pos_[(size_t)dst] = n;
  return n;
}

void KvCache::read_k(int seq, int layer, int head, int pos, float* out) const {
  k_store(layer).read(seq, head, pos, out);
}
void KvCache::read_v(int seq, int layer, int head, int pos, float* out) const {
  v_store(layer).read(seq, head, pos, out);
}

void KvCache::clear(int seq) { truncate(seq, 0); }

int KvCache::truncate(int seq, int n_keep) {
  check_seq(seq);
  require(n_keep >= 0, "KV cache: negative truncation point");
  if (n_keep >= n_pos_[(size_t)seq]) {
    pages_->shrink(seq, n_keep);  // pages reserved beyond n_keep go back
    return n_pos_[(size_t)seq];
  }
  // The token at n_keep sees (n_keep - window, n_keep) in a sliding layer:
  // those rows must still be in the ring, or nothing can be kept.
  if (!rings_hold(seq, n_keep)) n_keep = 0;
  n_pos_[(size_t)seq] = n_keep;
  pages_->shrink(seq, n_keep);
  for (auto& s : k_)
    if (s) s->truncate(seq, n_keep);
  for (auto& s : v_)
    if (s) s->truncate(seq, n_keep);
  return n_keep;
}

size_t KvCache::bytes_allocated() const {
  size_t total = 0;
  for (const auto& s : k_)
    if (s) total += s->bytes_allocated();
  for (const auto& s : v_)
    if (s) total += s->bytes_allocated();
  return total;
}

size_t KvCache::shared_bytes() const {
  const PageTable& pt = *pages_;
  if (pt.fixed() || pt.shared_pages() == 0) return 0;
  // A page is shared at the same index i in every table that lists it; a
  // store keeps that index's positions below its sink in its f16 sink tier.
  const int P = pt.page_positions();
  auto page_bytes = [&](int i) {
    size_t b = 0;
    for (size_t l = 0; l < k_.size(); ++l)
      if (k_[l] && window_[l] == 0)
        for (const TierStore* st : {k_[l].get(), v_[l].get()}) {
          const int sink = st->counts(0, cfg_.n_ctx_seq).sink;  // the store's sink (0 untiered), any sequence
          b += (size_t)n_head_kv_[l] * st->main_codec().row_bytes() *
               (size_t)std::max(0, (i + 1) * P - std::max(i * P, sink));
        }
    return b;
  };
  std::vector<uint8_t> seen((size_t)pt.n_pages(), 0);
  size_t total = 0;
  for (int s = 0; s < pt.n_seq(); ++s)
    for (int i = 0; i < pt.pages_held(s); ++i) {
      const int p = pt.pages(s)[(size_t)i];
      if (pt.refs(p) < 2 || seen[(size_t)p]) continue;
      seen[(size_t)p] = 1;
      total += (size_t)(pt.refs(p) - 1) * page_bytes(i);
    }
  return total;
}

KvCache::Usage KvCache::usage(int seq) const {
  check_seq(seq);
  Usage u;
  const int n = n_pos_[(size_t)seq];
  double values = 0, main_bits = 0, ring_bits = 0;
  int stores = 0, rings = 0;
  for (size_t l = 0; l < k_.size(); ++l) {
    if (!k_[l]) continue;  // shares another layer's rows
    const double d = head_dim_[l], heads = n_head_kv_[l];
    const bool ring = window_[l] > 0;
    for (const TierStore* s : {k_[l].get(), v_[l].get()}) {
      const auto c = s->counts(seq, n);
      const double row = (double)s->main_codec().row_bytes();
      u.bytes += (size_t)(heads * ((double)c.main * row + (double)(c.sink + c.recent) * d * 2.0));
      values += heads * (double)(c.sink + c.main + c.recent) * d;
      (ring ? ring_bits : main_bits) += 8.0 * row / d;
      ++(ring ? rings : stores);
      if (s != k_[l].get()) continue;
      if (ring) {
        u.ring_cells += c.main;
      } else {
        u.sink_cells += c.sink;
        u.main_cells += c.main;
        u.recent_cells += c.recent;
      }
    }
  }
  u.bits_per_value = values > 0 ? 8.0 * (double)u.bytes / values : 0;
  // The main tier of the global layers; a model of sliding layers only has
  // nothing else to report.
  u.main_bits_per_value = stores > 0 ? main_bits / stores : rings > 0 ? ring_bits / rings : 0;
  return u;
}

std::string KvCache::describe() const {
  // The first global layer with its own store shows the main types; sliding
  // and shared layers are summarised after it.
  const TierStore *k0 = nullptr, *v0 = nullptr, *ks = nullptr, *vs = nullptr;
  int n_sliding = 0, n_shared = 0, ring = 0;
  for (size_t l = 0; l < k_.size(); ++l) {
    if (!k_[l]) {
      ++n_shared;
    } else if (window_[l] > 0) {
      ++n_sliding;
      ks = k_[l].get();
      vs = v_[l].get();
      ring = ks->ring();
    } else if (!k0) {
      k0 = k_[l].get();
      v0 = v_[l].get();
    }
  }
  std::string out = "KV cache:";
  char buf[320];
  if (k0) {
    const double kbits = 8.0 * (double)k0->main_codec().row_bytes() / k0->main_codec().dim();
    const double vbits = 8.0 * (double)v0->main_codec().row_bytes() / v0->main_codec().dim();
    std::snprintf(buf, sizeof buf, " K %s (%.2f bits/value), V %s (%.2f bits/value), f16 sink %d + recent %d,",
                  cache_type_name(cfg_.type_k), kbits, cache_type_name(cfg_.type_v), vbits,
                  k0->tiered() || v0->tiered() ? cfg_.hp_sink : 0, k0->tiered() || v0->tiered() ? cfg_.hp_recent : 0);
    out += buf;
  }
  if (ks) {
    std::snprintf(buf, sizeof buf, " %d sliding-window layers K %s / V %s in rings of %d positions,", n_sliding,
                  cache_type_name(ks->main_codec().type()), cache_type_name(vs->main_codec().type()), ring);
    out += buf;
  }
  if (n_shared > 0) {
    std::snprintf(buf, sizeof buf, " %d layers sharing earlier layers' KV,", n_shared);
    out += buf;
  }
  if (unified())
    std::snprintf(buf, sizeof buf, " one pool of %d positions (%d pages of %d) for %d seq of up to %d positions, %.1f MiB allocated",
                  pool_positions(), pages_->n_pages(), pages_->page_positions(), cfg_.n_seq, cfg_.n_ctx_seq,
                  (double)bytes_allocated() / (1 << 20));
  else
    std::snprintf(buf, sizeof buf, " %d seq x %d positions, %.1f MiB allocated", cfg_.n_seq, cfg_.n_ctx_seq,
                  (double)bytes_allocated() / (1 << 20));
  return out + buf;
}

void KvCache::release_memory() {
  for (int seq = 0; seq < cfg_.n_seq; ++seq)
    require(n_pos(seq) == 0, "KV cache: memory released while sequence " + std::to_string(seq) + " holds positions");
  rows_.discard();
  for (auto* stores : {&k_, &v_})
    for (auto& s : *stores)
      if (s) s->discard_own_rows();
}

void KvCache::restore_memory() {
  rows_.commit();
  for (auto* stores : {&k_, &v_})
    for (auto& s : *stores)
      if (s) s->commit_own_rows();
}

}  // namespace oscar::kv
