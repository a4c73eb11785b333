// Shared pages in the KV pool (docs/kv-pool.md): the page table counts each
// page's references (share, copy-on-write, release in any order, a shared
// page counted once), and KvCache::share_prefix gives a sequence another's
// prefix exactly as that one holds it: every row reads back as the donor's
// would after a truncation to the same length, and writes after a cut below
// the shared pages never reach the donor's rows.
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

TEST(PageTableSharing, CountsReferencesAndFreesWithTheLast) {
  PageTable t(3, 4, 8, 32);  // 3 sequences, 8 pages of 4 positions
  ASSERT_TRUE(t.ensure(0, 14));  // pages 0..3
  t.share(1, 0, 3);              // seq 1 lists 0, 1, 2
  EXPECT_EQ(t.pages(1), (std::vector<int>{0, 1, 2}));
  EXPECT_EQ(t.refs(0), 2);
  EXPECT_EQ(t.refs(3), 1);
  EXPECT_EQ(t.shared_pages(), 3);
  EXPECT_TRUE(t.shared(1, 2));
  EXPECT_FALSE(t.shared(0, 3));
  EXPECT_EQ(t.used_pages(), 4);  // a shared page counts once
  EXPECT_EQ(t.free_pages(), 4);
  t.share(2, 1, 2);  // a third reference to pages 0 and 1
  EXPECT_EQ(t.refs(1), 3);
  // seq 1 grows past its shared pages: a fresh page of its own.
  ASSERT_TRUE(t.ensure(1, 16));
  EXPECT_EQ(t.pages_held(1), 4);
  EXPECT_EQ(t.refs(t.pages(1)[3]), 1);
  EXPECT_EQ(t.free_pages(), 3);
  // Released in any order: the donor first keeps the others' pages in use.
  t.shrink(0, 0);
  EXPECT_EQ(t.free_pages(), 4);  // only page 3 (seq 0's alone) came back
  EXPECT_EQ(t.refs(0), 2);
  EXPECT_EQ(t.refs(2), 1);
  t.shrink(1, 5);  // seq 1 keeps pages 0, 1
  EXPECT_EQ(t.free_pages(), 6);
  t.shrink(2, 0);
  EXPECT_EQ(t.refs(0), 1);
  EXPECT_EQ(t.free_pages(), 6);
  EXPECT_EQ(t.shared_pages(), 0);
  t.shrink(1, 0);
  EXPECT_EQ(t.free_pages(), 8);
  for (int p = 0; p < 8; ++p) EXPECT_EQ(t.refs(p), 0);
}

TEST(PageTableSharing, MakePrivateGivesTheWriterACopy) {
  PageTable t(2, 4, 6, 24);
  ASSERT_TRUE(t.ensure(0, 12));  // pages 0, 1, 2
  t.share(1, 0, 3);
  EXPECT_EQ(t.make_private(1, 2), 2);  // page 2 replaced; the caller copies 2's rows
  EXPECT_NE(t.pages(1)[2], 2);
  EXPECT_EQ(t.refs(2), 1);
  EXPECT_EQ(t.refs(t.pages(1)[2]), 1);
  EXPECT_EQ(t.pages(0), (std::vector<int>{0, 1, 2}));
  EXPECT_EQ(t.make_private(1, 2), -1);  // already its own
  EXPECT_EQ(t.free_pages(), 2);
  // No free page left for a copy: refused, nothing changed.
  ASSERT_TRUE(t.ensure(0, 20));
  EXPECT_EQ(t.free_pages(), 0);
  EXPECT_THROW(t.make_private(1, 0), Error);
  EXPECT_EQ(t.pages(1)[0], 0);
  EXPECT_EQ(t.refs(0), 2);
}

TEST(PageTableSharing, FreeAfterCountsOnlyPagesEveryHolderGivesBack) {
  PageTable t(3, 4, 10, 40);
  ASSERT_TRUE(t.ensure(0, 16));  // 4 pages
  t.share(1, 0, 2);
  ASSERT_TRUE(t.ensure(1, 12));  // + 1 own page
  ASSERT_TRUE(t.ensure(2, 4));   // 1 page
  EXPECT_EQ(t.free_pages(), 4);
  // Dropping seq 0 alone frees its two unshared pages, not the shared ones.
  EXPECT_EQ(t.free_after({0, 9, 9}), 6);
  // Dropping 0 and 1 frees all of theirs.
  EXPECT_EQ(t.free_after({0, 0, 9}), 9);
  // Seq 1 keeping its first page keeps page 0 listed.
  EXPECT_EQ(t.free_after({0, 1, 9}), 8);
  EXPECT_EQ(t.free_after({9, 9, 9}), 4);
}

TEST(PageTableSharing, SplitTablesAndNonEmptyTargetsRefuse) {
  PageTable c = PageTable::contiguous(2, 4, 8);
  EXPECT_THROW(c.share(1, 0, 1), Error);
  PageTable t(2, 4, 4, 16);
  ASSERT_TRUE(t.ensure(0, 8));
  ASSERT_TRUE(t.ensure(1, 1));
  EXPECT_THROW(t.share(1, 0, 1), Error);  // seq 1 holds a page already
  EXPECT_THROW(t.share(0, 0, 1), Error);
  t.shrink(1, 0);
  EXPECT_THROW(t.share(1, 0, 3), Error);  // more than seq 0 holds
}

// Feeds positions [n_pos(seq), n) of the given rows (rows[p]: K of both
// layers back to back; V is K + 1).
struct Feeder {
  KvCache& cache;
  int width;  // n_kv * d
  void grow(int seq, const std::vector<std::vector<float>>& rows, int n) {
    ASSERT_TRUE(cache.reserve(seq, n));
    for (int p = cache.n_pos(seq); p < n; ++p) {
      for (int l = 0; l < 2; ++l) {
        const float* k = &rows[(size_t)p][(size_t)(l * width)];
        std::vector<float> v(k, k + width);
        for (float& x : v) x += 1.0f;
        cache.store(seq, l, p, k, v.data());
      }
      cache.commit(seq, p + 1);
    }
  }
};

std::vector<std::vector<float>> random_rows(int n, int width, unsigned seed) {
  std::mt19937 rng(seed);
  std::normal_distribution<float> nd;
  std::vector<std::vector<float>> rows((size_t)n, std::vector<float>((size_t)(2 * width)));
  for (auto& r : rows)
    for (float& x : r) x = nd(rng);
  return rows;
}

// Every stored row of seq a equals seq b's, positions [0, n).
void expect_same_rows(const KvCache& c, int a, int b, int n, int d, int n_kv, const char* step) {
  std::vector<float> x((size_t)d), y((size_t)d);
  for (int p = 0; p < n; ++p)
    for (int l = 0; l < 2; ++l)
      for (int h = 0; h < n_kv; ++h) {
        c.read_k(a, l, h, p, x.data());
        c.read_k(b, l, h, p, y.data());
        ASSERT_EQ(x, y) << step << ": K pos " << p << " layer " << l << " head " << h;
        c.read_v(a, l, h, p, x.data());
        c.read_v(b, l, h, p, y.data());
        ASSERT_EQ(x, y) << step << ": V pos " << p << " layer " << l << " head " << h;
      }
}

// A tiered q2_0 cache (f16 sink 8, recent 16, pages of 8): sequence 1 shares
// 70 of sequence 0's 100 positions; sequence 2 holds the same 100 rows and
// is truncated to 70. Sharing must leave sequence 1 exactly as that
// truncation left sequence 2, through further growth too, while sequence 0
// keeps its own rows; shared pages are counted once by the pool.
TEST(KvCacheSharing, SharedPrefixEqualsTheDonorTruncated) {
  const int d = 64, n_kv = 2, page = 8, width = n_kv * d;
  for (auto [tk, tv] : {std::pair{CacheType::Q2_0, CacheType::Q2_0}, {CacheType::F16, CacheType::F16},
                        {CacheType::Q2_0, CacheType::F16}}) {
    KvCacheConfig cfg;
    cfg.type_k = tk;
    cfg.type_v = tv;
    cfg.n_seq = 3;
    cfg.n_ctx_seq = 200;
    cfg.hp_sink = 8;
    cfg.hp_recent = 16;
    cfg.pool_positions = 600;
    cfg.page_positions = page;
    KvCache cache(two_layers(d, n_kv), cfg, table());
    Feeder f{cache, width};
    const auto rows = random_rows(160, width, 11), tail = random_rows(160, width, 12);
    f.grow(0, rows, 100);
    f.grow(2, rows, 100);
    ASSERT_EQ(cache.truncate(2, 70), 70);
    const int free_before = cache.free_positions();
    ASSERT_EQ(cache.share_prefix(1, 0, 70), 70);
    const int shared = cache.shareable_pages(0, 70);
    // Tiered: seq 0 has written main rows up to 100 - 16 = 84, so 70 / 8 = 8
    // pages are final and listed; page 8 (positions 64..71) is copied.
    EXPECT_EQ(shared, 8);
    EXPECT_EQ(cache.pages().shared_pages(), 8);
    EXPECT_EQ(cache.free_positions(), free_before - page);  // one page taken, for the copy
    EXPECT_EQ(cache.pages().pages_held(1), 9);
    // The shared rows usage() counts twice: main-tier rows of pages 0..7,
    // less the sink's 8 positions where the store is tiered (q2_0).
    auto main_positions = [&](CacheType t) { return (size_t)(t == CacheType::Q2_0 ? 64 - 8 : 64); };
    const size_t row_k = cache.k_store(0).main_codec().row_bytes(), row_v = cache.v_store(0).main_codec().row_bytes();
    EXPECT_EQ(cache.shared_bytes(), 2 * n_kv * (main_positions(tk) * row_k + main_positions(tv) * row_v));
    expect_same_rows(cache, 1, 2, 70, d, n_kv, "just shared");
    expect_same_rows(cache, 1, 0, 70, d, n_kv, "against the donor");
    // Both continue with the same new rows: still identical.
    std::vector<std::vector<float>> cont(rows.begin(), rows.begin() + 70);
    cont.insert(cont.end(), tail.begin(), tail.begin() + 90);
    f.grow(1, cont, 160);
    f.grow(2, cont, 160);
    expect_same_rows(cache, 1, 2, 160, d, n_kv, "grown on");
    // Seq 1 cut below the shared pages and grown again: page 2 (positions
    // 16..23) is copied before the write, seq 0 still reads its own rows.
    ASSERT_EQ(cache.truncate(1, 20), 20);
    ASSERT_EQ(cache.truncate(2, 20), 20);
    f.grow(1, tail, 60);
    f.grow(2, tail, 60);
    expect_same_rows(cache, 1, 2, 60, d, n_kv, "cut and grown");
    EXPECT_EQ(cache.pages().shared_pages(), 2);  // pages 0 and 1 only
    // Seq 0 against a fresh copy of its own 100 rows.
    cache.clear(2);
    f.grow(2, rows, 100);
    expect_same_rows(cache, 0, 2, 100, d, n_kv, "donor untouched");
    // Released in any order, the pool gets every page back.
    cache.clear(0);
    EXPECT_EQ(cache.pages().shared_pages(), 0);
    cache.clear(2);
    cache.clear(1);
    EXPECT_EQ(cache.free_positions(), cache.pool_positions());
  }
}

// An f32 cache (no tiers: every position in pages) shares whole pages up to
// the donor's length and copies the partial one; the pool's used positions
// count a shared page once, and usage() over-counts by shared_bytes().
TEST(KvCacheSharing, UntieredCacheSharesUpToTheDonorsLength) {
  const int d = 16, n_kv = 2, page = 8, width = n_kv * d;
  KvCacheConfig cfg;
  cfg.type_k = cfg.type_v = CacheType::F32;
  cfg.n_seq = 2;
  cfg.n_ctx_seq = 120;
  cfg.pool_positions = 120;  // 15 pages
  cfg.page_positions = page;
  KvCache cache(two_layers(d, n_kv), cfg, table());
  Feeder f{cache, width};
  const auto rows = random_rows(100, width, 5);
  f.grow(0, rows, 50);
  EXPECT_EQ(cache.share_prefix(1, 0, 45), 45);
  EXPECT_EQ(cache.pages().shared_pages(), 5);  // 45 / 8 whole pages
  EXPECT_EQ(cache.pool_positions() - cache.free_positions(), 8 * page);  // 7 of seq 0 + 1 copy
  const size_t per_position = 2 * 2 * n_kv * d * sizeof(float);  // K+V of 2 layers
  EXPECT_EQ(cache.shared_bytes(), 5 * page * per_position);
  EXPECT_EQ(cache.usage(0).bytes + cache.usage(1).bytes - cache.shared_bytes(), (50 + 5) * per_position);
  std::vector<float> x((size_t)d);
  for (int p = 0; p < 45; ++p) {
    cache.read_k(1, 1, 1, p, x.data());
    for (int i = 0; i < d; ++i) ASSERT_EQ(x[(size_t)i], rows[(size_t)p][(size_t)(width + d + i)]);
  }
  // A share needing a copy with no free page keeps the whole pages only.
  cache.clear(1);
  ASSERT_TRUE(cache.reserve(0, 120));  // every page
  ASSERT_EQ(cache.free_positions(), 0);
  EXPECT_EQ(cache.share_prefix(1, 0, 45), 40);
  EXPECT_EQ(cache.n_pos(1), 40);
}

// A sliding-window layer (window 24, ring 24 + 8) beside a paged global
// layer: its ring rows are copied with the prefix, and a prefix whose next
// position needs ring rows the donor has overwritten is not shared at all
// (truncation would keep nothing either).
TEST(KvCacheSharing, SlidingRingsAreCopiedOrNothingIsShared) {
  const int d = 16, n_kv = 2, width = n_kv * d;
  model::ModelConfig m = two_layers(d, n_kv);
  m.layers[0].sliding_window = 24;
  KvCacheConfig cfg;
  cfg.type_k = cfg.type_v = CacheType::F32;
  cfg.n_seq = 3;
  cfg.n_ctx_seq = 128;
  cfg.swa_slack = 8;
  cfg.pool_positions = 384;
  cfg.page_positions = 8;
  KvCache cache(m, cfg, table());
  Feeder f{cache, width};
  const auto rows = random_rows(128, width, 21);
  f.grow(0, rows, 100);  // the ring holds positions 68..99
  EXPECT_EQ(cache.share_prefix(1, 0, 90), 0);  // position 90 reads 67..89: 67 is gone
  EXPECT_EQ(cache.n_pos(1), 0);
  EXPECT_EQ(cache.pages().pages_held(1), 0);
  ASSERT_EQ(cache.share_prefix(1, 0, 95), 95);
  f.grow(2, rows, 100);
  ASSERT_EQ(cache.truncate(2, 95), 95);
  std::vector<float> x((size_t)d), y((size_t)d);
  for (int p = 0; p < 95; ++p)
    for (int l = 0; l < 2; ++l) {
      if (l == 0 && p < 95 - 24) continue;  // outside the window position 95 reads
      for (int h = 0; h < n_kv; ++h) {
        cache.read_k(1, l, h, p, x.data());
        cache.read_k(2, l, h, p, y.data());
        ASSERT_EQ(x, y) << "pos " << p << " layer " << l;
        for (int i = 0; i < d; ++i) ASSERT_EQ(x[(size_t)i], rows[(size_t)p][(size_t)(l * width + h * d + i)]);
      }
    }
  EXPECT_EQ(cache.k_store(0).first_valid(1), cache.k_store(0).first_valid(2));
}

}  // namespace
}  // namespace oscar::kv
