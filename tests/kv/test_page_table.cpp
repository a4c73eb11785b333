// The KV pool's pages (page_table.h) and a KvCache built on them: pages are
// taken as sequences grow and given back when they shrink, a short pool
// takes nothing, a split cache's pages are fixed, and rows stored through
// the pages read back per sequence whatever the page order.
#include <gtest/gtest.h>

#include <random>
#include <vector>

#include "core/cpu_features.h"
#include "core/error.h"
#include "kv/kv_cache.h"
#include "kv/page_table.h"
#include "quant/quant.h"
#include "kv_test_shapes.h"

namespace oscar::kv {
namespace {

using testing::table;
using testing::two_layers;

TEST(PageTable, TakesFreePagesAndGivesThemBack) {
  PageTable t(3, 4, 5, 20);  // 3 sequences, 5 pages of 4 positions
  EXPECT_FALSE(t.fixed());
  EXPECT_EQ(t.free_pages(), 5);
  ASSERT_TRUE(t.ensure(0, 5));  // 2 pages from the pool's start
  EXPECT_EQ(t.pages(0), (std::vector<int>{0, 1}));
  ASSERT_TRUE(t.ensure(1, 1));
  EXPECT_EQ(t.pages(1), (std::vector<int>{3}));  // the middle of the free run 2..4
  ASSERT_TRUE(t.ensure(0, 8));  // still 2 pages
  EXPECT_EQ(t.free_pages(), 2);
  EXPECT_EQ(t.page_of(0, 7), 1);
  // Not enough for 3 more pages: nothing is taken.
  EXPECT_FALSE(t.ensure(2, 12));
  EXPECT_EQ(t.free_pages(), 2);
  EXPECT_EQ(t.pages_held(2), 0);
  t.shrink(0, 3);  // page 1 back
  EXPECT_EQ(t.pages(0), (std::vector<int>{0}));
  EXPECT_EQ(t.free_pages(), 3);
  // Free: 1, 2 (a run after page 0) and 4. The middle of the longest run,
  // then (page 3 taken) the longest left, 1, then the last, 4.
  ASSERT_TRUE(t.ensure(2, 12));
  EXPECT_EQ(t.pages(2), (std::vector<int>{2, 1, 4}));
  EXPECT_EQ(t.free_pages(), 0);
  t.shrink(2, 0);
  t.shrink(1, 0);
  t.shrink(0, 0);
  EXPECT_EQ(t.free_pages(), 5);
  // A sequence may not grow past its limit, pool or not.
  EXPECT_THROW(t.ensure(0, 21), Error);
}

TEST(PageTable, PrefersThePageAfterTheSequencesLast) {
  PageTable t(2, 2, 6, 12);
  ASSERT_TRUE(t.ensure(0, 2));  // page 0: the pool's start
  ASSERT_TRUE(t.ensure(1, 2));  // page 3: the middle of the free run 1..5
  ASSERT_TRUE(t.ensure(0, 6));  // pages 1 and 2 follow page 0
  ASSERT_TRUE(t.ensure(1, 4));  // page 4 follows page 3
  EXPECT_EQ(t.pages(0), (std::vector<int>{0, 1, 2}));
  EXPECT_EQ(t.pages(1), (std::vector<int>{3, 4}));
  // Page 3 is taken: seq 0 starts a new run in the longest free one (just page 5).
  ASSERT_TRUE(t.ensure(0, 8));
  EXPECT_EQ(t.pages(0), (std::vector<int>{0, 1, 2, 5}));
}

// Four sequences growing a page each in turn (slots decoding together): each
// starts in the middle of the longest free run, so each holds one run of
// consecutive pages (one attention segment) instead of every fourth page.
TEST(PageTable, SequencesGrowingTogetherKeepOneRunEach) {
  PageTable t(4, 2, 16, 32);
  for (int n = 2; n <= 8; n += 2)
    for (int s = 0; s < 4; ++s) ASSERT_TRUE(t.ensure(s, n));
  EXPECT_EQ(t.pages(0), (std::vector<int>{0, 1, 2, 3}));
  EXPECT_EQ(t.pages(1), (std::vector<int>{8, 9, 10, 11}));  // middle of 1..15
  EXPECT_EQ(t.pages(2), (std::vector<int>{4, 5, 6, 7}));    // middle of 1..7
  EXPECT_EQ(t.pages(3), (std::vector<int>{12, 13, 14, 15}));  // middle of 9..15
}

TEST(PageTable, ContiguousGivesEverySequenceItsOwnPages) {
  const PageTable t = PageTable::contiguous(3, 4, 10);  // 3 pages each
  EXPECT_TRUE(t.fixed());
  EXPECT_EQ(t.n_pages(), 9);
  EXPECT_EQ(t.free_pages(), 0);
  EXPECT_EQ(t.pages(1), (std::vector<int>{3, 4, 5}));
  PageTable u = t;
  EXPECT_TRUE(u.ensure(2, 10));
  u.shrink(2, 0);  // fixed: kept
  EXPECT_EQ(u.pages_held(2), 3);
}

// Three sequences grown in turns over a pool of pages of 8 positions, cut
// back and grown again: every row of every layer reads back as stored (f32
// rows are exact), the pool's free count follows the sequences' lengths.
TEST(KvCachePaged, RowsSurviveInterleavedGrowthAndTruncation) {
  const int d = 16, n_kv = 2, page = 8;
  KvCacheConfig cfg;
  cfg.type_k = cfg.type_v = CacheType::F32;
  cfg.n_seq = 3;
  cfg.n_ctx_seq = 100;
  cfg.pool_positions = 200;
  cfg.page_positions = page;
  KvCache cache(two_layers(d, n_kv), cfg, table());
  ASSERT_TRUE(cache.unified());
  EXPECT_EQ(cache.pool_positions(), 200);
  std::mt19937 rng(7);
  std::normal_distribution<float> nd;
  // rows[seq][pos][layer]: K row, V is K + 1
  std::vector<std::vector<std::vector<std::vector<float>>>> rows(3);
  auto grow = [&](int seq, int n) {
    ASSERT_TRUE(cache.reserve(seq, n));
    for (int p = cache.n_pos(seq); p < n; ++p) {
      rows[(size_t)seq].resize((size_t)p + 1);
      for (int l = 0; l < 2; ++l) {
        std::vector<float> k((size_t)n_kv * d), v(k.size());
        for (size_t i = 0; i < k.size(); ++i) v[i] = (k[i] = nd(rng)) + 1.0f;
        cache.store(seq, l, p, k.data(), v.data());
        rows[(size_t)seq][(size_t)p].push_back(k);
      }
      cache.commit(seq, p + 1);
    }
  };
  auto check = [&](const char* step) {
    int held = 0;
    for (int s = 0; s < 3; ++s) {
      held += cache.pages().pages_held(s);
      EXPECT_EQ(cache.pages().pages_held(s), (cache.n_pos(s) + page - 1) / page) << step;
      std::vector<float> out((size_t)d);
      for (int p = 0; p < cache.n_pos(s); ++p)
        for (int l = 0; l < 2; ++l)
          for (int h = 0; h < n_kv; ++h) {
            cache.read_k(s, l, h, p, out.data());
            for (int i = 0; i < d; ++i) ASSERT_EQ(out[(size_t)i], rows[(size_t)s][(size_t)p][(size_t)l][(size_t)(h * d + i)]) << step;
            cache.read_v(s, l, h, p, out.data());
            for (int i = 0; i < d; ++i) ASSERT_EQ(out[(size_t)i], rows[(size_t)s][(size_t)p][(size_t)l][(size_t)(h * d + i)] + 1.0f) << step;
          }
    }
    EXPECT_EQ(cache.free_positions(), 200 - held * page) << step;
  };
  for (int n = 5; n <= 60; n += 11) {
    grow(0, n);
    grow(1, n + 3);
    grow(2, n / 2);
  }
  check("grown in turns");
  EXPECT_EQ(cache.truncate(1, 20), 20);
  rows[1].resize(20);
  cache.clear(2);
  rows[2].clear();
  check("cut back");
  grow(2, 90);  // takes the freed pages, wherever they are
  grow(1, 40);
  check("grown again");
  // The pool is short: a store without pages is refused, not written elsewhere.
  EXPECT_FALSE(cache.reserve(0, 100));
  std::vector<float> x((size_t)n_kv * d, 0.0f);
  EXPECT_THROW(cache.store(0, 0, cache.pages().pages_held(0) * page, x.data(), x.data()), Error);
  check("after a refused reservation");
}

// A cache's footprint: its allocation is the fixed part plus the pool's
// positions at the per-position cost, and q2_0 pages cost several times
// less per position than f16 ones.
TEST(KvCachePaged, FootprintMatchesTheAllocation) {
  KvCacheConfig cfg;
  cfg.type_k = cfg.type_v = CacheType::Q2_0;
  cfg.n_seq = 4;
  cfg.n_ctx_seq = 2048;
  cfg.hp_sink = 64;
  cfg.hp_recent = 256;
  cfg.pool_positions = 4096;
  const auto m = two_layers(128, 2);
  const KvCache::Footprint f = KvCache::footprint(m, cfg, table());
  const KvCache cache(m, cfg, table());
  EXPECT_EQ(cache.bytes_allocated(), f.fixed_bytes + 4096 * f.bytes_per_position);
  // 2 layers x K,V x 2 heads x 36 bytes (q2_0 rows of 128), tiers f16.
  EXPECT_EQ(f.bytes_per_position, 2u * 2 * 2 * 36);
  EXPECT_EQ(f.fixed_bytes, 4u * (64 + 256) * 2 * 2 * 2 * 256);
  cfg.type_k = cfg.type_v = CacheType::F16;
  EXPECT_EQ(KvCache::footprint(m, cfg, table()).bytes_per_position, 2u * 2 * 2 * 256);
}

}  // namespace
}  // namespace oscar::kv
