// Tier bookkeeping of the KV store (docs/OSCAR.md §3): for each sequence
// the first HP_SINK positions and the last HP_RECENT positions stay in f16,
// everything between is the cache type; a token is quantized once, when it
// leaves the recent window. A model of that rule, kept by this test, predicts
// the tier of every position after every store and truncation; rows are
// checked against f16 bits and the independent q2 reference (q2_ref.h).
#include <gtest/gtest.h>

#include <unistd.h>

#include <cmath>
#include <cstring>
#include <fstream>
#include <iterator>
#include <map>
#include <tuple>
#include <random>
#include <vector>

#include "core/cpu_features.h"
#include "core/error.h"
#include "kv/kv_cache.h"
#include "kv/tier_store.h"
#include "q2_ref.h"
#include "quant/quant.h"

namespace oscar::kv {
namespace {

using kvtest::f16r;
using kvtest::ref_to_f16;

const quant::QuantTable& table() {
  static const quant::QuantTable t(detect_cpu());
  return t;
}

uint16_t ref_to_bf16(float f) {  // round to nearest even on the upper 16 bits
  uint32_t u;
  std::memcpy(&u, &f, 4);
  const uint32_t lsb = (u >> 16) & 1;
  return (uint16_t)((u + 0x7fff + lsb) >> 16);
}

enum class Tier { Sink, Main, Recent };

struct Harness {
  CacheType type;
  int d, g, heads, n_seq, n_ctx, sink, recent;
  float clip;
  RowCodec main, f16;
  TierStore store;
  bool tiered;
  int S, R;  // effective tier sizes of the model
  std::mt19937 rng{42};
  struct Seq {
    std::vector<std::vector<float>> x;  // per stored position: (heads, d)
    int qe = 0;                         // first position not in sink/main
  };
  std::vector<Seq> seqs;
  // Bytes of each main row when first seen: (seq, head, pos) -> bytes.
  std::map<std::tuple<int, int, int>, std::vector<uint8_t>> snapshot;
  bool f16_exact_inputs = false;

  Harness(CacheType t, int d_, int g_, float clip_, int heads_, int n_seq_, int n_ctx_, int sink_, int recent_)
      : type(t), d(d_), g(g_), heads(heads_), n_seq(n_seq_), n_ctx(n_ctx_), sink(sink_), recent(recent_),
        clip(clip_), main(t, d_, table(), {clip_, g_}), f16(CacheType::F16, d_, table(), {}),
        store(main, f16, n_seq_, heads_, n_ctx_, sink_, recent_) {
    tiered = is_quantized(t) && (sink > 0 || recent > 0);
    S = tiered ? std::min(sink, n_ctx) : 0;
    R = tiered ? std::min(recent, n_ctx) : 0;
    seqs.assign((size_t)n_seq, Seq{{}, S});
  }

  Tier tier(int seq, int p) const {
    if (p < S) return Tier::Sink;
    if (p < seqs[(size_t)seq].qe) return Tier::Main;
    return Tier::Recent;
  }

  void append(int seq) {
    Seq& s = seqs[(size_t)seq];
    const int p = (int)s.x.size();
    std::normal_distribution<float> nd(0.0f, 0.5f + (float)(p % 7));
    std::vector<float> x((size_t)heads * d);
    for (float& v : x) v = f16_exact_inputs ? f16r(nd(rng)) : nd(rng);
    store.store(seq, p, x.data());
    s.x.push_back(x);
    // The rule: once stored, position p leaves the recent window of R.
    if (p >= S) s.qe = R > 0 ? std::max(s.qe, p + 1 - R) : p + 1;
  }

  void truncate(int seq, int keep) {
    Seq& s = seqs[(size_t)seq];
    ASSERT_LT(keep, (int)s.x.size());
    store.truncate(seq, keep);
    s.x.resize((size_t)keep);
    // Quantized rows below `keep` stay quantized; nothing above survives.
    s.qe = std::max(S, std::min(s.qe, keep));
    for (auto it = snapshot.begin(); it != snapshot.end();)
      it = (std::get<0>(it->first) == seq && std::get<2>(it->first) >= keep) ? snapshot.erase(it) : std::next(it);
  }

  // The value a main row must hold: what was stored, rounded to f16 when it
  // went through the f16 recent window first.
  std::vector<float> main_source(const std::vector<float>& xh) const {
    std::vector<float> v(xh);
    if (tiered && R > 0)
      for (float& e : v) e = f16r(e);
    return v;
  }

  std::string check_row(int seq, int h, int p, const uint8_t* row, const RowCodec& codec) {
    const std::vector<float> xh(seqs[(size_t)seq].x[(size_t)p].begin() + (size_t)h * d,
                                seqs[(size_t)seq].x[(size_t)p].begin() + (size_t)(h + 1) * d);
    const std::string where = "seq " + std::to_string(seq) + " head " + std::to_string(h) + " pos " + std::to_string(p) + ": ";
    const Tier t = tier(seq, p);
    if (t != Tier::Main) {
      if (codec.type() != CacheType::F16) return where + "f16 tier row has another codec";
      for (int i = 0; i < d; ++i)
        if ((row[2 * i] | row[2 * i + 1] << 8) != ref_to_f16(xh[(size_t)i])) return where + "f16 bits differ at " + std::to_string(i);
      return "";
    }
    if (codec.type() != type) return where + "main row has codec " + cache_type_name(codec.type());
    const auto src = main_source(xh);
    switch (type) {
      case CacheType::Q2_0: {
        const int rank = clip > 0 ? (int)std::floor(clip * d + 1e-3) : -1;  // clip*d is exact here (d power of 2)
        const std::string bad = kvtest::q2_row_mismatch(row, rank < 0 ? src : kvtest::ref_clip(src, rank), g);
        if (!bad.empty()) return where + bad;
        break;
      }
      case CacheType::F16:
        for (int i = 0; i < d; ++i)
          if ((row[2 * i] | row[2 * i + 1] << 8) != ref_to_f16(src[(size_t)i])) return where + "f16 bits";
        break;
      case CacheType::BF16:
        for (int i = 0; i < d; ++i)
          if ((row[2 * i] | row[2 * i + 1] << 8) != ref_to_bf16(src[(size_t)i])) return where + "bf16 bits";
        break;
      case CacheType::F32:
        if (std::memcmp(row, src.data(), 4 * (size_t)d) != 0) return where + "f32 bits";
        break;
      default: {  // q8_0 / q4_0: blocks of 32, error below a fraction of the block's max
        std::vector<float> y((size_t)d);
        codec.decode(row, y.data());
        // q8_0: step amax/127, error <= step/2; q4_0: step amax/8 with codes
        // -8..7, so the far end of the other sign is off by up to one step.
        const float tol = type == CacheType::Q8_0 ? 0.51f / 127.0f : 1.01f / 8.0f;
        for (int b = 0; b < d; b += 32) {
          float amax = 0;
          for (int i = b; i < b + 32; ++i) amax = std::max(amax, std::fabs(src[(size_t)i]));
          for (int i = b; i < b + 32; ++i)
            if (std::fabs(y[(size_t)i] - src[(size_t)i]) > amax * tol + 1e-6f * amax)
              return where + "quantized value too far at " + std::to_string(i);
        }
      }
    }
    // Encoded once: the bytes never change while the position is kept.
    auto key = std::make_tuple(seq, h, p);
    std::vector<uint8_t> bytes(row, row + codec.row_bytes());
    auto it = snapshot.find(key);
    if (it == snapshot.end()) snapshot.emplace(key, bytes);
    else if (it->second != bytes) return where + "main row re-encoded (bytes changed)";
    return "";
  }

  // counts(), segments() and the rows, for every sequence.
  void check_all(const std::string& step) {
    for (int seq = 0; seq < n_seq; ++seq) {
      const int n = (int)seqs[(size_t)seq].x.size();
      int want[3] = {0, 0, 0};
      for (int p = 0; p < n; ++p) ++want[(int)tier(seq, p)];
      const auto c = store.counts(seq, n);
      ASSERT_EQ(c.sink, want[0]) << step << " seq " << seq << " n " << n;
      ASSERT_EQ(c.main, want[1]) << step << " seq " << seq << " n " << n;
      ASSERT_EQ(c.recent, want[2]) << step << " seq " << seq << " n " << n;
      ASSERT_EQ(store.tiered(), tiered);
      for (int h = 0; h < heads; ++h) {
        std::vector<Segment> seg;
        store.segments(seq, h, n, seg);
        const int k = (int)seg.size();
        ASSERT_LE(k, 4) << step;
        int p = 0, ring = 0, mains = 0, sinks = 0;
        for (int i = 0; i < k; ++i) {
          ASSERT_EQ(seg[i].begin, p) << step << ": segments must cover [0, n) in order";
          ASSERT_LT(seg[i].begin, seg[i].end) << step << ": empty segment";
          const Tier t = tier(seq, seg[i].begin);
          ring += t == Tier::Recent;
          mains += t == Tier::Main;
          sinks += t == Tier::Sink;
          for (int q = seg[i].begin; q < seg[i].end; ++q) {
            ASSERT_EQ((int)tier(seq, q), (int)t) << step << ": segment mixes tiers at " << q;
            const uint8_t* row = seg[i].rows + (size_t)(q - seg[i].begin) * seg[i].stride;
            const std::string bad = check_row(seq, h, q, row, *seg[i].codec);
            ASSERT_EQ(bad, "") << step;
          }
          p = seg[i].end;
        }
        ASSERT_EQ(p, n) << step;
        ASSERT_LE(ring, 2) << step << ": the ring wraps at most once";
        ASSERT_LE(mains, 1) << step;
        ASSERT_LE(sinks, 1) << step;
        // read() agrees with the stored rows.
        std::vector<float> y((size_t)d);
        for (int q = 0; q < n; ++q) {
          store.read(seq, h, q, y.data());
          const float* xh = seqs[(size_t)seq].x[(size_t)q].data() + (size_t)h * d;
          for (int i = 0; i < d; ++i) {
            if (tier(seq, q) != Tier::Main) ASSERT_EQ(y[(size_t)i], f16r(xh[i])) << step << " read " << q;
            else ASSERT_TRUE(std::isfinite(y[(size_t)i]));
          }
        }
      }
    }
  }
};

// The full scenario on one harness: two sequences growing interleaved past
// every boundary (ring wrap several times), then truncation inside the
// recent tier, the main tier, the sink and to zero, each followed by appends.
void scenario(Harness& hs) {
  int step = 0;
  auto app = [&](int seq, int n) {
    for (int i = 0; i < n; ++i) {
      hs.append(seq);
      hs.check_all("step " + std::to_string(step++) + " (append seq " + std::to_string(seq) + ")");
      if (::testing::Test::HasFatalFailure()) return;
    }
  };
  auto trunc = [&](int seq, int keep) {
    hs.truncate(seq, keep);
    hs.check_all("step " + std::to_string(step++) + " (truncate seq " + std::to_string(seq) + " to " + std::to_string(keep) + ")");
  };
  // Interleaved growth; seq 1 grows at half the rate.
  for (int i = 0; i < 24 && !::testing::Test::HasFatalFailure(); ++i) {
    app(0, 1);
    if (i % 2 == 0 && hs.n_seq > 1) app(1, 1);
  }
  if (::testing::Test::HasFatalFailure()) return;
  const int n0 = (int)hs.seqs[0].x.size();  // 24
  trunc(0, n0 - 2);                         // inside the recent tier
  app(0, 9);
  trunc(0, 10);                             // inside the main tier (sink 3, recent 5)
  app(0, 8);
  if (hs.n_seq > 1) app(1, 7);
  trunc(0, 2);                              // inside the sink
  app(0, 12);
  if (hs.n_seq > 1) trunc(1, 1);
  trunc(0, 0);
  app(0, 14);
  if (hs.n_seq > 1) app(1, 20);
}

TEST(KvTiers, Q2SinkRecentTwoSequences) {
  Harness hs(CacheType::Q2_0, 32, 8, 0.75f, 2, 2, 40, 3, 5);
  scenario(hs);
}

TEST(KvTiers, Q2NoClipWholeRowGroup) {
  Harness hs(CacheType::Q2_0, 64, 64, 0.0f, 1, 2, 40, 3, 5);
  scenario(hs);
}

TEST(KvTiers, Q8AndQ4Main) {
  for (CacheType t : {CacheType::Q8_0, CacheType::Q4_0}) {
    Harness hs(t, 32, 32, 0.0f, 2, 2, 40, 3, 5);
    scenario(hs);
    if (HasFatalFailure()) return;
  }
}

TEST(KvTiers, RecentZero) {
  // Rows past the sink go straight to the main tier (inputs are f16-exact, so
  // it does not matter whether they are rounded to f16 first).
  Harness hs(CacheType::Q2_0, 32, 16, 0.92f, 2, 2, 40, 3, 0);
  hs.f16_exact_inputs = true;
  scenario(hs);
}

TEST(KvTiers, SinkZero) {
  Harness hs(CacheType::Q2_0, 32, 32, 0.96f, 2, 2, 40, 0, 5);
  scenario(hs);
}

TEST(KvTiers, NoTiersIsAllMain) {
  Harness hs(CacheType::Q2_0, 32, 8, 0.75f, 2, 2, 40, 0, 0);
  scenario(hs);
  EXPECT_FALSE(hs.store.tiered());
}

TEST(KvTiers, TiersLargerThanContext) {
  Harness hs(CacheType::Q2_0, 32, 8, 0.0f, 1, 2, 40, 50, 50);
  scenario(hs);
  Harness hr(CacheType::Q2_0, 32, 8, 0.0f, 1, 2, 40, 2, 60);
  scenario(hr);
}

TEST(KvTiers, FloatTypesNeverTier) {
  for (CacheType t : {CacheType::F16, CacheType::BF16, CacheType::F32}) {
    Harness hs(t, 32, 32, 0.0f, 2, 2, 40, 3, 5);
    EXPECT_FALSE(hs.store.tiered()) << cache_type_name(t);
    scenario(hs);
    if (HasFatalFailure()) return;
    std::vector<Segment> seg;
    hs.store.segments(0, 0, (int)hs.seqs[0].x.size(), seg);
    EXPECT_EQ(seg.size(), 1u);
  }
}

// A ring of 5 after 3 sinks at n = 12: main [3, 7), recent 7..11 in slots
// 2,3,4,0,1 -> ring segments [7, 10) and [10, 12).
TEST(KvTiers, RingWrapSplitsInTwo) {
  Harness hs(CacheType::Q2_0, 32, 32, 0.0f, 1, 1, 40, 3, 5);
  for (int i = 0; i < 12; ++i) hs.append(0);
  std::vector<Segment> seg;
  hs.store.segments(0, 0, 12, seg);
  ASSERT_EQ(seg.size(), 4u);
  EXPECT_EQ(seg[0].begin, 0);
  EXPECT_EQ(seg[0].end, 3);
  EXPECT_EQ(seg[1].begin, 3);
  EXPECT_EQ(seg[1].end, 7);
  EXPECT_EQ(seg[2].end - seg[2].begin + seg[3].end - seg[3].begin, 5);
  EXPECT_EQ(seg[3].end, 12);
  // The second ring segment starts at slot 0: its rows come before the first's.
  EXPECT_LT(seg[3].rows, seg[2].rows);
  hs.check_all("n=12");
}

// ---- KvCache -----------------------------------------------------------------

model::ModelConfig fake_model(int n_layer, int d, int n_head, int n_head_kv) {
  model::ModelConfig m;
  m.arch = "test";
  m.n_layer = n_layer;
  m.n_embd = n_head * d;
  for (int l = 0; l < n_layer; ++l) {
    model::LayerConfig lc;
    lc.n_head = n_head;
    lc.n_head_kv = n_head_kv;
    lc.head_dim = d;
    lc.rope_dim = d;
    m.layers.push_back(lc);
  }
  return m;
}

void fill(KvCache& c, int seq, int n, int n_layer, int kvw) {
  std::mt19937 rng(seq + 1);
  std::normal_distribution<float> nd;
  std::vector<float> k((size_t)kvw), v((size_t)kvw);
  for (int p = c.n_pos(seq); p < n; ++p) {
    for (int l = 0; l < n_layer; ++l) {
      for (auto& e : k) e = nd(rng);
      for (auto& e : v) e = nd(rng);
      c.store(seq, l, p, k.data(), v.data());
    }
    c.commit(seq, p + 1);
  }
}

TEST(KvCacheUsage, MainTierAloneIs225BitsAtD128) {
  const auto m = fake_model(2, 128, 4, 2);
  KvCacheConfig cfg;
  cfg.type_k = cfg.type_v = CacheType::Q2_0;
  cfg.n_ctx_seq = 64;
  KvCache c(m, cfg, table());
  fill(c, 0, 40, 2, 2 * 128);
  const auto u = c.usage(0);
  EXPECT_DOUBLE_EQ(u.main_bits_per_value, 2.25);
  EXPECT_DOUBLE_EQ(u.bits_per_value, 2.25);  // no tiers: every position in the main tier
  // 2 layers x (K + V) x 2 heads x 40 positions x 36 bytes
  EXPECT_EQ(u.bytes, 2u * 2 * 2 * 40 * 36);
  EXPECT_EQ(u.main_cells, 80);
  EXPECT_NE(c.describe().find("2.25 bits/value"), std::string::npos) << c.describe();
}

// q2_0 K and V with f16 sink and recent tiers.
KvCacheConfig tiered_q2(int n_ctx, int sink, int recent) {
  KvCacheConfig cfg;
  cfg.type_k = cfg.type_v = CacheType::Q2_0;
  cfg.n_ctx_seq = n_ctx;
  cfg.hp_sink = sink;
  cfg.hp_recent = recent;
  return cfg;
}

TEST(KvCacheUsage, TieredBitsPerValue) {
  const auto m = fake_model(2, 128, 4, 2);
  const KvCacheConfig cfg = tiered_q2(64, 4, 8);
  KvCache c(m, cfg, table());
  fill(c, 0, 40, 2, 2 * 128);
  const auto u = c.usage(0);
  EXPECT_DOUBLE_EQ(u.main_bits_per_value, 2.25);
  // per store: 2 heads x (28 x 36 + 12 x 256) = 8160 bytes; 4 stores.
  EXPECT_EQ(u.bytes, 4u * 8160);
  EXPECT_DOUBLE_EQ(u.bits_per_value, 8.0 * 4 * 8160 / (4.0 * 2 * 40 * 128));  // 6.375
  EXPECT_EQ(u.sink_cells, 8);
  EXPECT_EQ(u.main_cells, 56);
  EXPECT_EQ(u.recent_cells, 16);
  // Mixed: q2_0 K (2.25) and f16 V (16): V is not tiered.
  KvCacheConfig mix = cfg;
  mix.type_v = CacheType::F16;
  KvCache cm(m, mix, table());
  fill(cm, 0, 40, 2, 2 * 128);
  const auto um = cm.usage(0);
  EXPECT_DOUBLE_EQ(um.main_bits_per_value, (2.25 + 16.0) / 2);
  EXPECT_EQ(um.bytes, 2u * 8160 + 2u * 2 * 40 * 256);
  // f16 everywhere: 16 bits.
  KvCacheConfig f = cfg;
  f.type_k = f.type_v = CacheType::F16;
  KvCache cf(m, f, table());
  fill(cf, 0, 40, 2, 2 * 128);
  EXPECT_DOUBLE_EQ(cf.usage(0).bits_per_value, 16.0);
  EXPECT_EQ(cf.usage(0).sink_cells, 0);
}

TEST(KvCacheUsage, TruncateAndSequences) {
  const auto m = fake_model(1, 64, 2, 1);
  KvCacheConfig cfg;
  cfg.type_k = cfg.type_v = CacheType::Q2_0;
  cfg.n_seq = 2;
  cfg.n_ctx_seq = 32;
  cfg.hp_sink = 3;
  cfg.hp_recent = 5;
  KvCache c(m, cfg, table());
  fill(c, 0, 20, 1, 64);
  fill(c, 1, 6, 1, 64);
  EXPECT_EQ(c.n_pos(0), 20);
  EXPECT_EQ(c.n_pos(1), 6);
  auto u = c.usage(0);
  EXPECT_EQ(u.sink_cells, 3);
  EXPECT_EQ(u.main_cells, 12);
  EXPECT_EQ(u.recent_cells, 5);
  c.truncate(0, 10);  // inside main: 3..9 stay quantized, nothing recent
  u = c.usage(0);
  EXPECT_EQ(c.n_pos(0), 10);
  EXPECT_EQ(u.main_cells, 7);
  EXPECT_EQ(u.recent_cells, 0);
  EXPECT_EQ(c.usage(1).main_cells, 0);  // seq 1 untouched
  EXPECT_EQ(c.usage(1).recent_cells, 3);
  c.truncate(0, 15);  // beyond n: nothing happens
  EXPECT_EQ(c.n_pos(0), 10);
  c.clear(0);
  EXPECT_EQ(c.n_pos(0), 0);
  EXPECT_EQ(c.usage(0).bytes, 0u);
  EXPECT_THROW(c.n_pos(2), Error);
  std::vector<float> k(64), v(64);
  EXPECT_THROW(c.store(0, 0, 32, k.data(), v.data()), Error);
  EXPECT_THROW(c.commit(0, 33), Error);
  EXPECT_THROW(c.truncate(0, -1), Error);
  KvCacheConfig bad = cfg;
  bad.hp_sink = -1;
  EXPECT_THROW(KvCache(m, bad, table()), Error);
  bad = cfg;
  bad.q2_k.group_size = 12;  // does not divide 64
  EXPECT_THROW(KvCache(m, bad, table()), Error);
}

uint64_t resident_bytes() {
  std::ifstream f("/proc/self/statm");
  uint64_t size = 0, resident = 0;
  if (!(f >> size >> resident)) return 0;
  return resident * (uint64_t)sysconf(_SC_PAGESIZE);
}

// A cache of many small stores is resident at about its own size: the rows
// of all stores share one buffer, so rounding to huge pages happens once.
// With a buffer per store and tier, each of these 192 buffers of 8-24 KiB
// became a whole committed 2 MiB page where transparent huge pages are on
// (about 400 MiB here); elsewhere the test passes either way.
TEST(KvCacheMemory, ManySmallStoresAreResidentAtAboutTheirSize) {
#if defined(__SANITIZE_ADDRESS__)
  GTEST_SKIP() << "AddressSanitizer builds give each store its own heap block (kv_cache.cpp)";
#endif
  const auto m = fake_model(96, 64, 1, 1);
  const uint64_t before = resident_bytes();
  KvCache c(m, tiered_q2(64, 16, 32), table());
  const uint64_t grown = resident_bytes() - before;
  ASSERT_GT(before, 0u) << "no /proc/self/statm";
  EXPECT_LT(grown, c.bytes_allocated() + (uint64_t)(8 << 20)) << "allocated " << c.bytes_allocated();
}

}  // namespace
}  // namespace oscar::kv
