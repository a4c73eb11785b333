// One sequence of a KvCache exported and imported (seq_snapshot.h): a q2_0
// cache with f16 sink and recent tiers and a sliding-window layer, restored
// into another cache's sequence, reads back byte for byte, splits its tiers
// where the original did, and keeps doing so as both grow; a snapshot that
// does not fit the cache is refused before anything is written.
#include <gtest/gtest.h>

#include <cstring>
#include <random>
#include <vector>

#include "core/cpu_features.h"
#include "core/error.h"
#include "kv/kv_cache.h"
#include "kv/seq_snapshot.h"
#include "quant/quant.h"
#include "kv_test_shapes.h"

namespace oscar::kv {
namespace {

using testing::table;

// Layer 0 global, layer 1 a sliding window of 6 positions.
model::ModelConfig model_shape(int d, int n_kv) { return testing::two_layers(d, n_kv, 6); }

KvCacheConfig q2_config(int n_seq) {
  KvCacheConfig c;
  c.type_k = c.type_v = CacheType::Q2_0;
  c.n_seq = n_seq;
  c.n_ctx_seq = 64;
  c.hp_sink = 3;
  c.hp_recent = 5;
  c.swa_slack = 2;
  c.pool_positions = 64 * n_seq;
  c.page_positions = 8;
  return c;
}

class SeqSnapshot : public ::testing::Test {
 protected:
  static constexpr int d = 32, n_kv = 2;
  void grow(KvCache& c, int seq, int n, uint32_t seed) {
    ASSERT_TRUE(c.reserve(seq, n));
    std::mt19937 rng(seed);
    std::normal_distribution<float> nd;
    for (int p = c.n_pos(seq); p < n; ++p) {
      std::vector<float> k((size_t)n_kv * d), v(k.size());
      for (auto& x : k) x = nd(rng);
      for (auto& x : v) x = nd(rng);
      for (int l = 0; l < 2; ++l) c.store(seq, l, p, k.data(), v.data());
      c.commit(seq, p + 1);
    }
  }
  // Every readable row of both sequences, bit for bit.
  void expect_same(const KvCache& a, int sa, const KvCache& b, int sb) {
    ASSERT_EQ(a.n_pos(sa), b.n_pos(sb));
    const int n = a.n_pos(sa);
    std::vector<float> x(d), y(d);
    for (int l = 0; l < 2; ++l) {
      const int from = a.window(l) > 0 ? a.k_store(l).split(sa, n) : 0;
      EXPECT_EQ(a.k_store(l).split(sa, n), b.k_store(l).split(sb, n)) << "layer " << l;
      for (int p = from; p < n; ++p)
        for (int h = 0; h < n_kv; ++h) {
          a.read_k(sa, l, h, p, x.data());
          b.read_k(sb, l, h, p, y.data());
          ASSERT_EQ(0, std::memcmp(x.data(), y.data(), sizeof(float) * d)) << "K layer " << l << " pos " << p;
          a.read_v(sa, l, h, p, x.data());
          b.read_v(sb, l, h, p, y.data());
          ASSERT_EQ(0, std::memcmp(x.data(), y.data(), sizeof(float) * d)) << "V layer " << l << " pos " << p;
        }
    }
  }
};

TEST_F(SeqSnapshot, RoundTripKeepsTiersAndRowsAndGrowsAlike) {
  KvCache src(model_shape(d, n_kv), q2_config(2), table());
  KvCache dst(model_shape(d, n_kv), q2_config(3), table());
  grow(src, 1, 4, 1);    // another sequence first, so seq 0's pages are not the pool's first
  grow(src, 0, 30, 2);   // past sink and recent: all three tiers hold rows
  src.truncate(0, 27);   // a cut leaves the recent tier short of full
  const std::vector<int32_t> splits = sequence_splits(src, 0, 27);
  std::vector<uint8_t> rows = {0xAB};  // appended after what is there
  export_rows(src, 0, 27, splits, rows);
  EXPECT_EQ(rows[0], 0xAB);
  const auto shapes = store_shapes(src);
  ASSERT_EQ(shapes.size(), 4u);
  uint64_t expect = 0;
  for (size_t i = 0; i < shapes.size(); ++i) expect += store_rows_bytes(shapes[i], 27, splits[(size_t)i]);
  EXPECT_EQ(rows.size(), 1 + expect);
  // The q2_0 main tier is saved as its blocks: 36-byte rows... here d=32: 4 + 8 bytes.
  EXPECT_EQ(shapes[0].main_row_bytes, 12);
  EXPECT_LT(expect, 27u * 4 * n_kv * 2 * d);  // smaller than all rows in f16

  grow(dst, 0, 9, 3);  // something to drop first
  dst.clear(2);
  ASSERT_TRUE(dst.reserve(2, 27));
  import_sequence(dst, 2, 27, splits, std::span<const uint8_t>(rows).subspan(1));
  expect_same(src, 0, dst, 2);
  // The same new positions land in the same tiers of both.
  grow(src, 0, 40, 9);
  grow(dst, 2, 40, 9);
  expect_same(src, 0, dst, 2);
}

TEST_F(SeqSnapshot, ShortSequenceInsideTheSinkRoundTrips) {
  KvCache src(model_shape(d, n_kv), q2_config(1), table());
  KvCache dst(model_shape(d, n_kv), q2_config(1), table());
  grow(src, 0, 2, 5);
  const auto splits = sequence_splits(src, 0, 2);
  std::vector<uint8_t> rows;
  export_rows(src, 0, 2, splits, rows);
  ASSERT_TRUE(dst.reserve(0, 2));
  import_sequence(dst, 0, 2, splits, rows);
  expect_same(src, 0, dst, 0);
  grow(src, 0, 20, 6);
  grow(dst, 0, 20, 6);
  expect_same(src, 0, dst, 0);
}

TEST_F(SeqSnapshot, ImportRefusesWhatDoesNotFitAndWritesNothing) {
  KvCache src(model_shape(d, n_kv), q2_config(1), table());
  KvCache dst(model_shape(d, n_kv), q2_config(1), table());
  grow(src, 0, 20, 7);
  const auto splits = sequence_splits(src, 0, 20);
  std::vector<uint8_t> rows;
  export_rows(src, 0, 20, splits, rows);
  ASSERT_TRUE(dst.reserve(0, 20));
  std::vector<uint8_t> short_rows(rows.begin(), rows.end() - 1);
  EXPECT_THROW(import_sequence(dst, 0, 20, splits, short_rows), Error);
  auto bad = splits;
  bad[0] = 2;  // inside the sink: impossible with 20 positions
  EXPECT_THROW(import_sequence(dst, 0, 20, bad, rows), Error);
  bad = splits;
  bad[2] = 20 - 6 - 2 - 1;  // the ring cannot hold that many
  EXPECT_THROW(import_sequence(dst, 0, 20, bad, rows), Error);
  EXPECT_THROW(import_sequence(dst, 0, 20, std::span<const int32_t>(splits).first(3), rows), Error);
  EXPECT_EQ(dst.n_pos(0), 0);
  // A cache of other tiers has other shapes.
  KvCacheConfig other = q2_config(1);
  other.hp_recent = 4;
  KvCache dst2(model_shape(d, n_kv), other, table());
  EXPECT_NE(store_shapes(dst2), store_shapes(src));
  // A sequence that is not empty is never overwritten.
  import_sequence(dst, 0, 20, splits, rows);
  EXPECT_THROW(import_sequence(dst, 0, 20, splits, rows), Error);
}

TEST(StoreShape, SplitRules) {
  StoreShape tiered;
  tiered.main_type = CacheType::Q2_0;
  tiered.n_head_kv = 1;
  tiered.head_dim = 4;
  tiered.main_row_bytes = 5;
  tiered.sink = 2;
  tiered.recent = 3;
  EXPECT_TRUE(split_valid(tiered, 1, 2));
  EXPECT_FALSE(split_valid(tiered, 1, 1));
  EXPECT_TRUE(split_valid(tiered, 10, 7));
  EXPECT_FALSE(split_valid(tiered, 10, 6));  // 4 positions cannot be recent
  EXPECT_FALSE(split_valid(tiered, 10, 11));
  // 2 sink rows f16 (8 bytes each), 5 main rows of 5, 3 recent f16.
  EXPECT_EQ(store_rows_bytes(tiered, 10, 7), 2u * 8 + 5u * 5 + 3u * 8);
  StoreShape ring = tiered;
  ring.sink = ring.recent = 0;
  ring.ring = 4;
  EXPECT_TRUE(split_valid(ring, 10, 6));
  EXPECT_FALSE(split_valid(ring, 10, 5));
  EXPECT_EQ(store_rows_bytes(ring, 10, 7), 3u * 5);
  StoreShape plain = ring;
  plain.ring = 0;
  EXPECT_TRUE(split_valid(plain, 10, 0));
  EXPECT_FALSE(split_valid(plain, 10, 1));
}

}  // namespace
}  // namespace oscar::kv
