// Sliding-window layers keep only a ring of their last positions (slot =
// pos % ring), and layers that share another layer's KV have no store. The
// ring is checked against a plain record of every row stored; the cache's
// truncation rule (keep n when the token at n still finds its window in the
// ring, else clear) against the window arithmetic.
#include <gtest/gtest.h>

#include <random>
#include <vector>

#include "core/cpu_features.h"
#include "core/error.h"
#include "kv/kv_cache.h"
#include "kv/tier_store.h"
#include "quant/quant.h"

namespace oscar::kv {
namespace {

const quant::QuantTable& table() {
  static const quant::QuantTable t(detect_cpu());
  return t;
}

struct Ring {
  int d = 8, heads = 2, n_seq = 2, ring = 10;
  RowCodec f32{CacheType::F32, 8, table(), {}};
  RowCodec f16{CacheType::F16, 8, table(), {}};
  TierStore store{f32, f16, n_seq, heads, 100, /*sink=*/4, /*recent=*/4, ring};
  std::mt19937 rng{7};
  std::vector<std::vector<std::vector<float>>> rows = std::vector<std::vector<std::vector<float>>>(2);  // [seq][pos]

  void put(int seq, int pos) {
    std::normal_distribution<float> nd;
    std::vector<float> x((size_t)heads * d);
    for (auto& v : x) v = nd(rng);
    rows[(size_t)seq].resize((size_t)pos + 1);
    rows[(size_t)seq][(size_t)pos] = x;
    store.store(seq, pos, x.data());
  }

  // segments() covers exactly [lo, n) and every row reads back as stored.
  void check(int seq, int n, int lo) {
    for (int h = 0; h < heads; ++h) {
      std::vector<Segment> seg;
      store.segments(seq, h, n, seg);
      const int k = (int)seg.size();
      ASSERT_LE(k, 2);
      int p = lo;
      for (int i = 0; i < k; ++i) {
        ASSERT_EQ(seg[i].begin, p);
        ASSERT_GT(seg[i].end, seg[i].begin);
        for (int q = seg[i].begin; q < seg[i].end; ++q) {
          std::vector<float> out((size_t)d);
          seg[i].codec->decode(seg[i].rows + (size_t)(q - seg[i].begin) * seg[i].stride, out.data());
          for (int j = 0; j < d; ++j) ASSERT_EQ(out[(size_t)j], rows[(size_t)seq][(size_t)q][(size_t)h * d + j]);
          store.read(seq, h, q, out.data());
          for (int j = 0; j < d; ++j) ASSERT_EQ(out[(size_t)j], rows[(size_t)seq][(size_t)q][(size_t)h * d + j]);
        }
        p = seg[i].end;
      }
      ASSERT_EQ(p, std::max(n, lo));
    }
  }
};

TEST(WindowRing, KeepsTheLastRingPositionsWithoutTiers) {
  Ring r;
  EXPECT_EQ(r.store.ring(), 10);
  EXPECT_FALSE(r.store.tiered());  // sink/recent ignored in ring mode
  EXPECT_EQ(r.store.bytes_allocated(), (size_t)2 * 2 * 10 * 8 * 4);
  for (int p = 0; p < 37; ++p) {
    r.put(0, p);
    if (p % 3 == 0) r.put(1, p / 3);
    const int n = p + 1;
    EXPECT_EQ(r.store.first_valid(0), std::max(0, n - 10));
    r.check(0, n, std::max(0, n - 10));
    EXPECT_EQ(r.store.counts(0, n).main, std::min(n, 10));
  }
  r.check(1, 13, 3);  // the other sequence has its own ring
}

TEST(WindowRing, TruncationKeepsWhatTheRingStillHolds) {
  Ring r;
  for (int p = 0; p < 30; ++p) r.put(0, p);
  r.store.truncate(0, 25);  // 20..24 survive, 15..19 were overwritten
  EXPECT_EQ(r.store.first_valid(0), 20);
  r.check(0, 25, 20);
  for (int p = 25; p < 33; ++p) r.put(0, p);  // rewrite 25.. with new rows
  r.check(0, 33, 23);
  r.store.truncate(0, 5);  // nothing below 5 is left
  EXPECT_EQ(r.store.first_valid(0), 5);
  r.store.truncate(0, 0);
  EXPECT_EQ(r.store.first_valid(0), 0);
  for (int p = 0; p < 4; ++p) r.put(0, p);
  r.check(0, 4, 0);
}

model::ModelConfig three_layers() {
  model::ModelConfig m;
  m.n_layer = 3;
  for (int i = 0; i < 3; ++i) {
    model::LayerConfig l;
    l.n_head = 2;
    l.n_head_kv = 1;
    l.head_dim = 32;
    l.rope_dim = 32;
    m.layers.push_back(l);
  }
  m.layers[0].sliding_window = 4;  // sliding
  m.layers[2].sliding_window = 4;  // shares layer 0
  m.layers[2].kv_layer = 0;
  return m;
}

TEST(WindowCache, TypesRingsAndSharing) {
  const model::ModelConfig m = three_layers();
  KvCacheConfig c;
  c.type_k = c.type_v = CacheType::Q2_0;
  c.n_ctx_seq = 100;
  c.hp_recent = 8;
  c.swa_slack = 3;
  KvCache cache(m, c, table());
  EXPECT_EQ(cache.k_store(0).main_codec().type(), CacheType::F16);  // default for a quantized main type
  EXPECT_EQ(cache.k_store(0).ring(), 7);
  EXPECT_EQ(cache.k_store(1).main_codec().type(), CacheType::Q2_0);
  EXPECT_EQ(cache.k_store(1).ring(), 0);
  EXPECT_EQ(&cache.k_store(2), &cache.k_store(0));
  EXPECT_FALSE(cache.has_own_store(2));
  std::vector<float> x(32, 0.5f);
  EXPECT_THROW(cache.store(0, 2, 0, x.data(), x.data()), Error);

  c.type_k_swa = CacheType::Q8_0;
  c.type_v_swa = CacheType::F32;
  KvCache typed(m, c, table());
  EXPECT_EQ(typed.k_store(0).main_codec().type(), CacheType::Q8_0);
  EXPECT_EQ(typed.v_store(0).main_codec().type(), CacheType::F32);

  c = KvCacheConfig{};
  c.type_k = c.type_v = CacheType::F32;
  c.n_ctx_seq = 100;
  KvCache plain(m, c, table());
  EXPECT_EQ(plain.k_store(0).main_codec().type(), CacheType::F32);  // float main types carry over
}

// The token at n sees positions (n - window, n): a truncation to n is kept
// when the ring still holds n - window + 1 .. n - 1, else the sequence is
// cleared.
TEST(WindowCache, TruncateKeepsOrClears) {
  const model::ModelConfig m = three_layers();
  for (int slack : {0, 1, 3, 10}) {
    for (int n_pos : {3, 9, 20}) {
      for (int keep = 0; keep <= n_pos; ++keep) {
        KvCacheConfig c;
        c.type_k = c.type_v = CacheType::F16;
        c.n_ctx_seq = 64;
        c.swa_slack = slack;
        KvCache cache(m, c, table());
        std::vector<float> x(32, 0.25f);
        for (int p = 0; p < n_pos; ++p)
          for (int l : {0, 1}) cache.store(0, l, p, x.data(), x.data());
        cache.commit(0, n_pos);
        const int ring = 4 + slack;
        const int held_from = std::max(0, n_pos - ring);    // the ring holds [held_from, n_pos)
        const int needed_from = std::max(0, keep - 4 + 1);  // the token at keep reads [needed_from, keep)
        const bool ok = keep >= n_pos || needed_from >= keep || needed_from >= held_from;
        const int want = ok ? keep : 0;
        EXPECT_EQ(cache.truncate(0, keep), want) << "slack " << slack << " n " << n_pos << " keep " << keep;
        EXPECT_EQ(cache.n_pos(0), want);
      }
    }
  }
}

}  // namespace
}  // namespace oscar::kv
