// Fused attention against the reference path (docs/OSCAR.md §4): for
// every KV type (and mixed K/V types), head dims 64/128/256/512, GQA ratios
// 1/4/8 and cached lengths that cross every tier boundary (sink, main, ring
// wrap), the two agree to 1e-4 of the output norm, for decode batches (the
// flash-decoding split, pools of 2 and 4 threads) and multi-token batches of
// one and two sequences. Independently, both are checked against a plain
// double-precision softmax attention computed here: on an f32 cache (exact
// rows) and on a tiered q2_0 cache (rows as the spec says they are stored).
#include <gtest/gtest.h>

#include <cmath>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "../kv/q2_ref.h"
#include "attention/attention.h"
#include "attention/attention_kernels.h"
#include "core/cpu_features.h"
#include "core/thread_pool.h"
#include "kv/kv_cache.h"
#include "quant/quant.h"

namespace oscar::attention {
namespace {

using kv::CacheType;

const quant::QuantTable& table() {
  static const quant::QuantTable t(detect_cpu());
  return t;
}
// The kernels the CPU has; the scalar table is compared with it below.
const AttentionKernels& best_kernels() {
  static const AttentionKernels k(detect_cpu());
  return k;
}
ThreadPool& pool(int n) {
  static ThreadPool p1(1), p2(2), p4(4);
  return n == 1 ? p1 : n == 2 ? p2 : p4;
}

constexpr int kSink = 16, kRecent = 48;

model::ModelConfig fake_model(int d, int n_head, int n_head_kv) {
  model::ModelConfig m;
  m.arch = "test";
  m.n_layer = 2;
  m.n_embd = n_head * d;
  for (int l = 0; l < 2; ++l) {
    model::LayerConfig lc;
    lc.n_head = n_head;
    lc.n_head_kv = n_head_kv;
    lc.head_dim = d;
    lc.rope_dim = d;
    m.layers.push_back(lc);
  }
  return m;
}

// A cache of 2 sequences whose K/V inputs are kept, so tests can compute
// what attention should see. Layer 1 is the one attended; layer 0 gets other
// data so a mix-up of layers shows.
struct Fixture {
  model::ModelConfig m;
  kv::KvCacheConfig cfg;
  std::unique_ptr<kv::KvCache> cache;
  int d, n_head, n_kv;
  std::mt19937 rng{2024};
  std::vector<std::vector<float>> k_in[2], v_in[2];  // per seq, per position: (n_kv, d)

  // pool > 0: the sequences share one pool of that many positions in pages
  // of `page` positions (a unified cache).
  Fixture(CacheType tk, CacheType tv, int d_, int gqa, int n_ctx, int sink = kSink, int recent = kRecent,
          int group = 0, int pool = 0, int page = 256)
      : d(d_) {
    n_kv = gqa == 8 ? 1 : 2;
    n_head = n_kv * gqa;
    m = fake_model(d, n_head, n_kv);
    cfg.type_k = tk;
    cfg.type_v = tv;
    cfg.n_seq = 2;
    cfg.n_ctx_seq = n_ctx;
    cfg.hp_sink = sink;
    cfg.hp_recent = recent;
    cfg.q2_k = {0.96f, group};
    cfg.q2_v = {0.92f, group};
    cfg.pool_positions = pool;
    cfg.page_positions = page;
    cache = std::make_unique<kv::KvCache>(m, cfg, table());
  }

  // K rows with a few large channels (as real keys have), V plain normal.
  std::vector<float> random_kv(bool is_k) {
    std::normal_distribution<float> nd(0.0f, 1.0f);
    std::vector<float> x((size_t)n_kv * d);
    for (size_t i = 0; i < x.size(); ++i) x[i] = nd(rng) * (is_k && i % 17 == 3 ? 6.0f : 1.0f);
    return x;
  }

  void grow(int seq, int n) {
    if (n > cache->n_pos(seq)) {
      EXPECT_TRUE(cache->reserve(seq, n)) << "pool too small for the test";
    }
    for (int p = cache->n_pos(seq); p < n; ++p) {
      const auto k0 = random_kv(true), v0 = random_kv(false);
      cache->store(seq, 0, p, k0.data(), v0.data());  // layer 0: unrelated data
      const auto k = random_kv(true), v = random_kv(false);
      cache->store(seq, 1, p, k.data(), v.data());
      k_in[seq].push_back(k);
      v_in[seq].push_back(v);
      cache->commit(seq, p + 1);
    }
  }
};

struct Batch {
  std::vector<int32_t> seq, pos;
  std::vector<int> n_cached;
  std::vector<float> q, k, v;
  BatchView view() const {
    BatchView b;
    b.n_tokens = (int)seq.size();
    b.seq = seq.data();
    b.pos = pos.data();
    b.q = q.data();
    b.k = k.data();
    b.v = v.data();
    b.n_cached = n_cached.data();
    return b;
  }
};

// tokens: (seq, offset past that sequence's cached positions).
Batch make_batch(Fixture& f, const std::vector<std::pair<int, int>>& tokens) {
  Batch b;
  std::normal_distribution<float> nd(0.0f, 1.5f);
  for (auto [s, off] : tokens) {
    b.seq.push_back(s);
    b.n_cached.push_back(f.cache->n_pos(s));
    b.pos.push_back(f.cache->n_pos(s) + off);
    for (int i = 0; i < f.n_head * f.d; ++i) b.q.push_back(nd(f.rng));
    const auto k = f.random_kv(true), v = f.random_kv(false);
    b.k.insert(b.k.end(), k.begin(), k.end());
    b.v.insert(b.v.end(), v.begin(), v.end());
  }
  return b;
}

// max over (token, head) of |a - b| / |b| (norms of the head's output).
double max_rel_diff(const std::vector<float>& a, const std::vector<float>& b, int d) {
  double worst = 0;
  for (size_t h0 = 0; h0 < b.size(); h0 += (size_t)d) {
    double num = 0, den = 0;
    for (int i = 0; i < d; ++i) {
      num += std::pow((double)a[h0 + i] - b[h0 + i], 2);
      den += std::pow((double)b[h0 + i], 2);
    }
    worst = std::max(worst, std::sqrt(num) / std::max(std::sqrt(den), 1e-30));
  }
  return worst;
}

std::vector<float> run(bool fused, const Fixture& f, const Batch& b, int threads, FusedOptions options = {},
                       const AttentionKernels& kernels = best_kernels()) {
  std::vector<float> out(b.seq.size() * (size_t)f.n_head * f.d, NAN);
  const BatchView v = b.view();
  if (fused) attend_fused(f.m.layers[1], 1, *f.cache, v, out.data(), pool(threads), kernels, options);
  else attend_reference(f.m.layers[1], 1, *f.cache, v, out.data(), pool(threads));
  return out;
}

// Plain softmax attention in double: cached rows given by row_k/row_v, the
// batch's rows at full precision, causal within a sequence.
template <class RowK, class RowV>
std::vector<double> double_attention(const Fixture& f, const Batch& b, RowK row_k, RowV row_v) {
  const int d = f.d, group = f.n_head / f.n_kv, nt = (int)b.seq.size();
  std::vector<double> out((size_t)nt * f.n_head * d, 0.0);
  for (int t = 0; t < nt; ++t)
    for (int h = 0; h < f.n_head; ++h) {
      const int g = h / group;
      const float* q = &b.q[((size_t)t * f.n_head + h) * d];
      std::vector<double> s;
      std::vector<std::vector<double>> vals;
      auto add = [&](const std::vector<double>& k, const std::vector<double>& v) {
        double dot = 0;
        for (int i = 0; i < d; ++i) dot += q[i] * k[(size_t)i];
        s.push_back(dot / std::sqrt((double)d));
        vals.push_back(v);
      };
      for (int p = 0; p < b.n_cached[(size_t)t]; ++p) add(row_k(b.seq[(size_t)t], g, p), row_v(b.seq[(size_t)t], g, p));
      for (int j = 0; j < nt; ++j) {
        if (b.seq[(size_t)j] != b.seq[(size_t)t] || b.pos[(size_t)j] > b.pos[(size_t)t]) continue;
        const float* kr = &b.k[((size_t)j * f.n_kv + g) * d];
        const float* vr = &b.v[((size_t)j * f.n_kv + g) * d];
        add(std::vector<double>(kr, kr + d), std::vector<double>(vr, vr + d));
      }
      double mx = -INFINITY, sum = 0;
      for (double x : s) mx = std::max(mx, x);
      for (double& x : s) sum += (x = std::exp(x - mx));
      double* o = &out[((size_t)t * f.n_head + h) * d];
      for (size_t j = 0; j < s.size(); ++j)
        for (int i = 0; i < d; ++i) o[i] += s[j] / sum * vals[j][(size_t)i];
    }
  return out;
}

double max_rel_diff(const std::vector<float>& a, const std::vector<double>& b, int d) {
  return max_rel_diff(a, std::vector<float>(b.begin(), b.end()), d);
}

// ---- fused vs reference over the grid ------------------------------------

struct Case {
  CacheType k, v;
  int d, gqa;
};

std::string name(const ::testing::TestParamInfo<Case>& i) {
  return std::string(kv::cache_type_name(i.param.k)) + "_" + kv::cache_type_name(i.param.v) + "_d" +
         std::to_string(i.param.d) + "_gqa" + std::to_string(i.param.gqa);
}

class FusedVsReference : public ::testing::TestWithParam<Case> {};

TEST_P(FusedVsReference, AgreeAcrossTierBoundaries) {
  const Case c = GetParam();
  // Long contexts (the flash-decoding split needs >= 512 cached positions
  // per chunk pair) for the smaller head dims; shorter for 256/512 to stay fast.
  const int longest = c.d <= 128 ? 1100 : 600;
  Fixture f(c.k, c.v, c.d, c.gqa, longest + 8);
  // Cached lengths: empty, inside the sink, at it, just past it, inside the
  // first ring fill, at sink + recent (the first eviction is next), past it,
  // wrapped several times, and long.
  std::vector<int> lengths = {0, 5, kSink, kSink + 1, 40, kSink + kRecent, kSink + kRecent + 1, 100, 150, 257, longest};
  for (int n : lengths) {
    f.grow(0, n);
    f.grow(1, n / 2 + 3);
    const std::vector<std::vector<std::pair<int, int>>> batches = {
        {{0, 0}},                          // decode, one sequence
        {{1, 0}},                          // decode, the other
        {{0, 0}, {1, 0}},                  // two decodes
        {{0, 0}, {0, 1}, {0, 2}},          // prompt chunk of one sequence
        {{0, 0}, {1, 0}, {0, 1}, {1, 1}},  // two sequences interleaved
    };
    for (size_t bi = 0; bi < batches.size(); ++bi) {
      if (n >= 600 && bi >= 3) continue;  // long contexts: decode shapes only (speed)
      const Batch b = make_batch(f, batches[bi]);
      const auto ref = run(false, f, b, 2);
      for (int threads : {1, 2, 4}) {
        const auto fused = run(true, f, b, threads);
        const double e = max_rel_diff(fused, ref, c.d);
        ASSERT_LE(e, 1e-4) << "cached " << n << " batch " << bi << " threads " << threads;
      }
    }
  }
}

std::vector<Case> grid() {
  const std::pair<CacheType, CacheType> types[] = {
      {CacheType::F16, CacheType::F16},   {CacheType::Q8_0, CacheType::Q8_0}, {CacheType::Q4_0, CacheType::Q4_0},
      {CacheType::Q2_0, CacheType::Q2_0}, {CacheType::BF16, CacheType::BF16}, {CacheType::F32, CacheType::F32},
      {CacheType::Q2_0, CacheType::F16},  {CacheType::F16, CacheType::Q2_0},  {CacheType::Q8_0, CacheType::Q2_0},
      {CacheType::Q2_0, CacheType::Q4_0}, {CacheType::BF16, CacheType::Q8_0}};
  std::vector<Case> out;
  for (auto [k, v] : types)
    for (int d : {64, 128, 256, 512})
      for (int gqa : {1, 4, 8}) {
        // The big head dims with every ratio only for the OSCAR pair and f16;
        // otherwise one ratio, to keep the suite fast.
        const bool full = (k == CacheType::Q2_0 && v == CacheType::Q2_0) || (k == CacheType::F16 && v == CacheType::F16);
        if (d >= 256 && !full && gqa != 4) continue;
        out.push_back({k, v, d, gqa});
      }
  return out;
}

INSTANTIATE_TEST_SUITE_P(Grid, FusedVsReference, ::testing::ValuesIn(grid()), name);

// q2_0 with groups smaller than the head dim (per-group sums of q in the
// fused score) and with no tiers at all (every row 2-bit).
TEST(FusedVsReferenceQ2, GroupsAndNoTiers) {
  for (int group : {4, 32}) {
    for (auto [sink, recent] : {std::pair{kSink, kRecent}, {0, 0}, {0, 8}, {8, 0}}) {
      Fixture f(CacheType::Q2_0, CacheType::Q2_0, 128, 4, 700, sink, recent, group);
      for (int n : {3, 9, 60, 200, 600}) {
        f.grow(0, n);
        f.grow(1, n / 3);
        for (const auto& toks : {std::vector<std::pair<int, int>>{{0, 0}}, {{0, 0}, {1, 0}, {1, 1}}}) {
          const Batch b = make_batch(f, toks);
          const auto ref = run(false, f, b, 2);
          for (int threads : {2, 4})
            ASSERT_LE(max_rel_diff(run(true, f, b, threads), ref, 128), 1e-4)
                << "group " << group << " sink " << sink << " recent " << recent << " n " << n;
        }
      }
    }
  }
}

// Prompt batches: consecutive tokens of one sequence share an item's rows
// (query tiles of up to 32 heads), through the prompt-tile kernels (heads in
// lanes, where the CPU has them; f16 and q8_0 rows here) and through the
// per-row kernels (q2_0 rows, and every type with prompt tiles off). Long
// prompts, tiles cut short by the batch's end and by the other sequence, a
// batch whose positions do not ascend (a tile's keys seen in pieces), and a
// sliding-window layer, where each token of a tile sees other rows.
TEST(FusedVsReferenceTiles, PromptBatches) {
  for (auto [tk, tv] : {std::pair{CacheType::F16, CacheType::F16}, {CacheType::Q2_0, CacheType::Q2_0},
                        {CacheType::F32, CacheType::Q2_0}, {CacheType::Q8_0, CacheType::F16}})
    for (int gqa : {1, 4})
      for (int window : {0, 7}) {
        Fixture f(tk, tv, gqa == 1 ? 64 : 128, gqa, 1000);
        f.m.layers[1].sliding_window = window;
        for (int n : {0, 30, 150, 600}) {  // 780 cached: split into chunks across threads
          f.grow(0, n);
          f.grow(1, n / 2);
          std::vector<std::pair<int, int>> prompt;
          for (int i = 0; i < 19; ++i) prompt.push_back({0, i});
          std::vector<std::pair<int, int>> two = prompt;
          two.insert(two.begin() + 5, {1, 0});
          two.insert(two.begin() + 6, {1, 1});
          const std::vector<std::vector<std::pair<int, int>>> batches = {
              prompt, two, {{0, 1}, {0, 2}, {0, 0}, {0, 3}, {0, 4}}};
          for (size_t bi = 0; bi < batches.size(); ++bi) {
            const Batch b = make_batch(f, batches[bi]);
            const auto ref = run(false, f, b, 2);
            for (int threads : {1, 4})
              for (bool tiles : {true, false})
                ASSERT_LE(max_rel_diff(run(true, f, b, threads, {tiles}), ref, f.d), 1e-4)
                    << kv::cache_type_name(tk) << "/" << kv::cache_type_name(tv) << " gqa " << gqa << " window "
                    << window << " cached " << n << " batch " << bi << " threads " << threads << " tiles " << tiles;
          }
        }
      }
}

// The kernel tables of every ISA this host has, side by side in one process:
// each step down (AMX -> AVX512-VNNI -> AVX-512 -> AVX2 -> scalar) clears
// the features the step above needs.
std::vector<CpuFeatures> host_isas() {
  std::vector<CpuFeatures> isas;
  CpuFeatures c = detect_cpu();
  isas.push_back(c);
  if (c.amx_int8) c.amx_int8 = false, isas.push_back(c);
  if (c.avx512vnni) c.avx512vnni = c.avx512vbmi = false, isas.push_back(c);
  if (c.avx512f) c.avx512f = false, isas.push_back(c);
  if (c.neon || c.avx2) isas.push_back(CpuFeatures{});
  return isas;
}

// Every table of the host gives the scalar table's output to 1e-4 of the
// norm: decode (flash-decoding chunks with 4 threads) and prompt batches
// (tiles on and off), f16, q2_0 and mixed caches.
TEST(FusedAcrossIsas, EveryHostTableMatchesTheScalarTable) {
  const AttentionKernels scalar{CpuFeatures{}};
  EXPECT_STREQ(scalar.name, "scalar");
  EXPECT_EQ(scalar.tile, nullptr);
  std::vector<AttentionKernels> tables;
  for (const CpuFeatures& c : host_isas()) tables.emplace_back(c);
  for (auto [tk, tv] : {std::pair{CacheType::F16, CacheType::F16}, {CacheType::Q2_0, CacheType::Q2_0},
                        {CacheType::F32, CacheType::Q2_0}})
    for (int gqa : {1, 4}) {
      Fixture f(tk, tv, 128, gqa, 1000);
      f.grow(0, 600);
      f.grow(1, 200);
      std::vector<std::pair<int, int>> prompt;
      for (int i = 0; i < 19; ++i) prompt.push_back({0, i});
      for (const auto& toks : {std::vector<std::pair<int, int>>{{0, 0}}, {{0, 0}, {1, 0}}, prompt}) {
        const Batch b = make_batch(f, toks);
        for (int threads : {1, 4})
          for (bool tiles : {true, false}) {
            const auto want = run(true, f, b, threads, {tiles}, scalar);
            for (const AttentionKernels& k : tables)
              ASSERT_LE(max_rel_diff(run(true, f, b, threads, {tiles}, k), want, f.d), 1e-4)
                  << k.name << " " << kv::cache_type_name(tk) << "/" << kv::cache_type_name(tv) << " gqa " << gqa
                  << " tokens " << toks.size() << " threads " << threads << " tiles " << tiles;
          }
      }
    }
}

// Paged storage: two sequences grown in turns in a shared pool just large
// enough for both (pages of 16 and of 48 positions, neither a multiple of
// the fused blocks): the allocator gives each a run of its own until the
// runs meet, then places pages apart, so one sequence's pages do not all
// follow each other and its reads cross segment boundaries. Decode (the
// flash-decoding split included) and prompt batches agree with the
// reference path.
TEST(FusedVsReferencePaged, AgreeAcrossPageBoundaries) {
  for (auto [tk, tv] : {std::pair{CacheType::Q2_0, CacheType::Q2_0}, {CacheType::F16, CacheType::F16},
                        {CacheType::Q2_0, CacheType::F16}, {CacheType::Q8_0, CacheType::Q2_0}})
    for (int page : {16, 48}) {
      // 1296 positions: 81 pages of 16 or 27 of 48, what 860 + 431 positions take.
      Fixture f(tk, tv, 128, 4, 900, kSink, kRecent, 0, /*pool=*/1296, page);
      ASSERT_TRUE(f.cache->unified());
      for (int n = 0; n <= 860; n += 43) {
        f.grow(0, n);
        f.grow(1, n / 2 + 1);
        for (const auto& toks : {std::vector<std::pair<int, int>>{{0, 0}}, {{0, 0}, {1, 0}},
                                 {{0, 0}, {0, 1}, {0, 2}, {1, 0}, {0, 3}}}) {
          const Batch b = make_batch(f, toks);
          const auto ref = run(false, f, b, 2);
          for (int threads : {1, 4})
            ASSERT_LE(max_rel_diff(run(true, f, b, threads), ref, f.d), 1e-4)
                << kv::cache_type_name(tk) << "/" << kv::cache_type_name(tv) << " page " << page << " n " << n
                << " batch of " << toks.size() << " threads " << threads;
        }
      }
      // The runs really met: sequence 0 does not hold one run.
      const auto& p0 = f.cache->pages().pages(0);
      bool gap = false;
      for (size_t i = 1; i < p0.size(); ++i) gap = gap || p0[i] != p0[i - 1] + 1;
      EXPECT_TRUE(gap);
    }
}

// Shared prompt prefixes (KvCache::share_prefix): sequence 1 lists
// sequence 0's finished pages and its own copies after them, both grow on,
// and sequence 1 is cut back below the shared pages and grown again (its
// pages copied on write). The fused path reads the mixed page lists as the
// reference does.
TEST(FusedVsReferencePaged, AgreeOnSharedPrefixPages) {
  for (auto [tk, tv] : {std::pair{CacheType::Q2_0, CacheType::Q2_0}, {CacheType::F16, CacheType::F16},
                        {CacheType::Q2_0, CacheType::F16}})
    for (int page : {16, 48}) {
      // Plain names for the lambda below (clang 14 cannot capture a structured binding).
      const std::string types = std::string(kv::cache_type_name(tk)) + "/" + kv::cache_type_name(tv);
      Fixture f(tk, tv, 128, 4, 900, kSink, kRecent, 0, /*pool=*/1800, page);
      f.grow(0, 500);
      ASSERT_EQ(f.cache->share_prefix(1, 0, 430), 430);
      EXPECT_GT(f.cache->pages().shared_pages(), 0);
      f.k_in[1].assign(f.k_in[0].begin(), f.k_in[0].begin() + 430);
      f.v_in[1].assign(f.v_in[0].begin(), f.v_in[0].begin() + 430);
      auto check = [&](const char* step) {
        for (const auto& toks : {std::vector<std::pair<int, int>>{{0, 0}, {1, 0}}, {{1, 0}, {1, 1}, {0, 0}, {1, 2}}}) {
          const Batch b = make_batch(f, toks);
          const auto ref = run(false, f, b, 2);
          for (int threads : {1, 4})
            ASSERT_LE(max_rel_diff(run(true, f, b, threads), ref, f.d), 1e-4)
                << types << " page " << page << " " << step
                << " batch of " << toks.size() << " threads " << threads;
        }
      };
      check("just shared");
      f.grow(0, 560);
      f.grow(1, 520);
      check("both grown");
      ASSERT_EQ(f.cache->truncate(1, 200), 200);
      f.k_in[1].resize(200);
      f.v_in[1].resize(200);
      f.grow(1, 300);
      check("cut below the shared pages and grown");
    }
}

// ---- independent checks against double-precision attention ----------------

TEST(AttentionSemantics, F32CacheMatchesDoubleSoftmax) {
  for (int gqa : {1, 4, 8}) {
    // Split, then paged in alternating pages of 32 (a page-table mix-up
    // would read another position's or sequence's rows).
    Fixture f(CacheType::F32, CacheType::F32, 64, gqa, 700, kSink, kRecent, 0, gqa == 4 ? 1100 : 0, 32);
    for (int n : {0, 1, 37, 600}) {
      f.grow(0, n);
      f.grow(1, n / 2);
      const Batch b = make_batch(f, {{0, 0}, {1, 0}, {0, 1}, {0, 2}, {1, 1}});
      auto rk = [&](int s, int g, int p) {
        const float* x = &f.k_in[s][(size_t)p][(size_t)g * f.d];
        return std::vector<double>(x, x + f.d);
      };
      auto rv = [&](int s, int g, int p) {
        const float* x = &f.v_in[s][(size_t)p][(size_t)g * f.d];
        return std::vector<double>(x, x + f.d);
      };
      const auto want = double_attention(f, b, rk, rv);
      EXPECT_LE(max_rel_diff(run(false, f, b, 2), want, f.d), 1e-5) << "reference, gqa " << gqa << " n " << n;
      EXPECT_LE(max_rel_diff(run(true, f, b, 4), want, f.d), 1e-5) << "fused, gqa " << gqa << " n " << n;
    }
  }
}

// On a tiered q2_0 cache, attention must see sink and recent rows as f16 of
// the input, the rows between as the q2_0 code of that f16 row (checked
// against the spec, then decoded here), and the batch at full precision.
TEST(AttentionSemantics, TieredQ2MatchesDoubleSoftmaxOverStoredRows) {
  const int d = 128, sink = 4, recent = 12;
  Fixture f(CacheType::Q2_0, CacheType::Q2_0, d, 4, 200, sink, recent);
  for (int n : {2, 4, 10, 16, 17, 30, 150}) {
    f.grow(0, n);
    f.grow(1, n / 2 + 1);
    auto row = [&](bool is_k, int s, int g, int p) {
      const auto& in = (is_k ? f.k_in : f.v_in)[s][(size_t)p];
      std::vector<float> x16(in.begin() + (size_t)g * d, in.begin() + (size_t)(g + 1) * d);
      for (float& e : x16) e = kvtest::f16r(e);
      const int n_seq = f.cache->n_pos(s);
      const bool main = p >= sink && p < std::max(sink, n_seq - recent);
      if (!main) return std::vector<double>(x16.begin(), x16.end());
      const kv::TierStore& ts = is_k ? f.cache->k_store(1) : f.cache->v_store(1);
      std::vector<kv::Segment> seg;
      ts.segments(s, g, n_seq, seg);
      const int ns = (int)seg.size();
      for (int i = 0; i < ns; ++i)
        if (p >= seg[i].begin && p < seg[i].end) {
          EXPECT_EQ(seg[i].codec->type(), CacheType::Q2_0) << "pos " << p << " of " << n_seq << " should be 2-bit";
          const uint8_t* r = seg[i].rows + (size_t)(p - seg[i].begin) * seg[i].stride;
          const int rank = (int)((is_k ? 0.96 : 0.92) * d);
          EXPECT_EQ(kvtest::q2_row_mismatch(r, kvtest::ref_clip(x16, rank), d), "") << "pos " << p;
          const auto y = kvtest::ref_decode(r, d, d);
          return std::vector<double>(y.begin(), y.end());
        }
      ADD_FAILURE() << "no segment holds " << p;
      return std::vector<double>((size_t)d, 0.0);
    };
    const Batch b = make_batch(f, {{0, 0}, {0, 1}, {1, 0}});
    const auto want = double_attention(
        f, b, [&](int s, int g, int p) { return row(true, s, g, p); }, [&](int s, int g, int p) { return row(false, s, g, p); });
    EXPECT_LE(max_rel_diff(run(false, f, b, 2), want, d), 2e-5) << "reference, n " << n;
    EXPECT_LE(max_rel_diff(run(true, f, b, 4), want, d), 2e-5) << "fused, n " << n;
    if (HasFailure()) return;
  }
}

// A batch token never sees a later token of its batch, nor another
// sequence's tokens: changing those leaves its output unchanged.
TEST(AttentionSemantics, CausalAndSequenceIsolation) {
  Fixture f(CacheType::Q2_0, CacheType::Q2_0, 64, 4, 200, 4, 8);
  f.grow(0, 30);
  f.grow(1, 20);
  for (bool fused : {false, true}) {
    Batch b = make_batch(f, {{0, 0}, {1, 0}, {0, 1}});
    const auto a = run(fused, f, b, 2);
    const size_t qw = (size_t)f.n_head * f.d, kvw = (size_t)f.n_kv * f.d;
    for (size_t i = 0; i < kvw; ++i) {
      b.k[kvw * 1 + i] += 3.0f;  // seq 1's token
      b.v[kvw * 2 + i] -= 5.0f;  // seq 0's later token
      b.k[kvw * 2 + i] *= -2.0f;
    }
    const auto c = run(fused, f, b, 2);
    for (size_t i = 0; i < qw; ++i) ASSERT_EQ(a[i], c[i]) << (fused ? "fused" : "reference") << " token 0 saw a change";
    bool changed = false;
    for (size_t i = 0; i < qw; ++i) changed |= a[2 * qw + i] != c[2 * qw + i];
    EXPECT_TRUE(changed);
  }
}

}  // namespace
}  // namespace oscar::attention
