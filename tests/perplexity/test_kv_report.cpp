// oscar-perplexity --kv-report, its arithmetic checked on hand-built vectors:
// a two-layer model (one global layer with a q2_0 cache in f16 sink / q2_0
// main / f16 recent tiers, one sliding-window layer on an f16 ring that
// wraps), a Hadamard rotation on Q/K/V, decode steps and a two-token batch.
// The test plays the forward pass itself (observer calls, cache stores) and
// recomputes the expected sums independently: its own q2_0 codec written
// from docs/OSCAR.md, its own tier bookkeeping, plain loops in double.
#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <random>
#include <vector>

#include "core/cpu_features.h"
#include "core/error.h"
#include "core/fp16.h"
#include "kv/kv_cache.h"
#include "kv_report.h"
#include "quant/quant.h"

namespace {

using namespace oscar;

constexpr int kD = 8;  // head dim
constexpr int kHeads = 2, kKvHeads = 1;
constexpr int kSink = 1, kRecent = 2;
constexpr int kWindow = 3, kSlack = 1;  // ring of 4 rows on the sliding layer

float r16(float x) { return fp16_to_f32(f32_to_fp16(x)); }

// q2_0 of one row (no clipping, one group), from docs/OSCAR.md §2: lo = min,
// s = (hi - lo)/3, both stored as f16; code = clamp(round((x - lo)/s), 0, 3).
std::vector<float> q2_roundtrip(const float* x) {
  float lo = x[0], hi = x[0];
  for (int i = 1; i < kD; ++i) lo = std::min(lo, x[i]), hi = std::max(hi, x[i]);
  const float s = r16((hi - lo) / 3.0f), l = r16(lo);
  std::vector<float> out(kD);
  for (int i = 0; i < kD; ++i) {
    const double c = s > 0 ? std::nearbyint(((double)x[i] - l) / s) : 0.0;
    out[(size_t)i] = l + s * (float)std::clamp(c, 0.0, 3.0);
  }
  return out;
}

// Normalised 8x8 Walsh-Hadamard matrix, row-major.
std::vector<float> hadamard8() {
  std::vector<float> w(kD * kD);
  for (int r = 0; r < kD; ++r)
    for (int c = 0; c < kD; ++c) w[(size_t)(r * kD + c)] = (__builtin_popcount((unsigned)(r & c)) & 1 ? -1.0f : 1.0f) / std::sqrt(8.0f);
  return w;
}

std::vector<float> rotate(const std::vector<float>& w, const float* x, bool transpose = false) {
  std::vector<float> y(kD, 0.0f);
  for (int r = 0; r < kD; ++r)
    for (int c = 0; c < kD; ++c) y[(size_t)r] += (transpose ? w[(size_t)(c * kD + r)] : w[(size_t)(r * kD + c)]) * x[c];
  return y;
}

double dot(const float* a, const float* b) {
  double s = 0;
  for (int i = 0; i < kD; ++i) s += (double)a[i] * b[i];
  return s;
}

struct Expected {
  double ss = 0, sn = 0, os = 0, on = 0;
  long long n_scores = 0;
};

TEST(KvReport, SnrFormula) {
  EXPECT_DOUBLE_EQ(ppl::snr_db(100.0, 1.0), 20.0);
  EXPECT_DOUBLE_EQ(ppl::snr_db(2.0, 2.0), 0.0);
  EXPECT_NEAR(ppl::snr_db(1.0, 0.5), 3.0103, 1e-4);
  EXPECT_EQ(ppl::snr_db(1.0, 0.0), std::numeric_limits<double>::infinity());
  EXPECT_EQ(ppl::parse_kv_ref_type("f32"), ppl::KvRefType::F32);
  EXPECT_THROW(ppl::parse_kv_ref_type("q8_0"), Error);
}

// Plays 8 positions through both layers: 0..3 as one batch, 4 and 5 as
// decode steps, 6..7 as one batch (7 sees 6 at full precision). Positions
// 2 (inside the first batch), 4, 5, 6, 7 are measured.
TEST(KvReport, MatchesHandComputedSums) {
  model::ModelConfig c;
  c.n_layer = 2;
  model::LayerConfig g;
  g.n_head = kHeads;
  g.n_head_kv = kKvHeads;
  g.head_dim = kD;
  g.rope_dim = kD;
  model::LayerConfig sw = g;
  sw.sliding_window = kWindow;
  c.layers = {g, sw};
  const CpuFeatures cpu = detect_cpu();
  const quant::QuantTable table(cpu);
  kv::KvCacheConfig kc;
  kc.type_k = kc.type_v = kv::CacheType::Q2_0;
  kc.n_ctx_seq = 16;
  kc.hp_sink = kSink;
  kc.hp_recent = kRecent;
  kc.q2_k = kc.q2_v = {0.0f, 0};
  kc.swa_slack = kSlack;
  kv::KvCache cache(c, kc, table);

  const std::vector<float> W = hadamard8();
  std::mt19937 rng(3);
  std::normal_distribution<float> nd(0.0f, 1.0f);
  const int n_pos = 8;
  // Per layer and position: q (2 heads), k, v (1 KV head), unrotated.
  std::vector<float> Q[2], K[2], V[2];
  for (int il = 0; il < 2; ++il) {
    Q[il].resize((size_t)n_pos * kHeads * kD);
    K[il].resize((size_t)n_pos * kD);
    V[il].resize((size_t)n_pos * kD);
    for (float& x : Q[il]) x = nd(rng);
    for (float& x : K[il]) x = nd(rng) + 0.5f;
    for (float& x : V[il]) x = nd(rng);
  }
  const std::vector<int> measured = {2, 4, 5, 6, 7};
  auto is_measured = [&](int, int pos) { return std::find(measured.begin(), measured.end(), pos) != measured.end(); };
  ppl::KvReport report(c, ppl::KvRefType::F16, is_measured);
  ppl::KvReport report32(c, ppl::KvRefType::F32, is_measured);
  Expected ex[2], ex32[2];

  const std::vector<std::pair<int, int>> batches = {{0, 4}, {4, 1}, {5, 1}, {6, 2}};
  const float scale = 1.0f / std::sqrt((float)kD);
  for (const auto& [b0, n] : batches) {
    std::vector<int32_t> seq((size_t)n, 0), pos((size_t)n);
    std::vector<int> n_cached((size_t)n, b0);
    for (int i = 0; i < n; ++i) pos[(size_t)i] = b0 + i;
    for (int il = 0; il < 2; ++il) {
      const model::LayerConfig& l = c.layers[(size_t)il];
      const float* q = &Q[il][(size_t)b0 * kHeads * kD];
      const float* k = &K[il][(size_t)b0 * kD];
      const float* v = &V[il][(size_t)b0 * kD];
      // The kernels' view: rotated rows of the batch, and the output the
      // engine would produce (exact attention over rows as they read them).
      std::vector<float> qr((size_t)n * kHeads * kD), kr((size_t)n * kD), vr((size_t)n * kD), out(qr.size());
      for (int i = 0; i < n; ++i) {
        for (int h = 0; h < kHeads; ++h) {
          const auto y = rotate(W, q + (i * kHeads + h) * kD);
          std::copy(y.begin(), y.end(), &qr[(size_t)(i * kHeads + h) * kD]);
        }
        auto y = rotate(W, k + i * kD);
        std::copy(y.begin(), y.end(), &kr[(size_t)i * kD]);
        y = rotate(W, v + i * kD);
        std::copy(y.begin(), y.end(), &vr[(size_t)i * kD]);
      }
      for (int i = 0; i < n; ++i) {
        const int p_q = b0 + i;
        const int lo = l.sliding_window > 0 ? std::max(0, p_q - l.sliding_window + 1) : 0;
        for (int h = 0; h < kHeads; ++h) {
          const float* qh = q + (i * kHeads + h) * kD;
          const float* qrh = &qr[(size_t)(i * kHeads + h) * kD];
          std::vector<double> s_ref, s_kv, s_ref32;
          std::vector<std::vector<float>> v_eng, v_ref, v_ref32;
          for (int p = lo; p <= p_q; ++p) {
            const bool cached = p < b0;
            // What the engine holds for key p (rotated): the batch in f32;
            // cached rows by tier at this moment (b0 positions stored).
            std::vector<float> ke, ve;
            const std::vector<float> kp = rotate(W, &K[il][(size_t)p * kD]), vp = rotate(W, &V[il][(size_t)p * kD]);
            if (!cached) {
              ke = kp;
              ve = vp;
            } else if (il == 1 || p < kSink || p >= std::max(kSink, b0 - kRecent)) {  // f16 ring / sink / recent
              ke = kp;
              ve = vp;
              for (float& x : ke) x = r16(x);
              for (float& x : ve) x = r16(x);
            } else {  // encoded from its f16 recent-ring row when it left the window
              std::vector<float> k16 = kp, v16 = vp;
              for (float& x : k16) x = r16(x);
              for (float& x : v16) x = r16(x);
              ke = q2_roundtrip(k16.data());
              ve = q2_roundtrip(v16.data());
            }
            std::vector<float> kref(&K[il][(size_t)p * kD], &K[il][(size_t)(p + 1) * kD]);
            std::vector<float> vref(&V[il][(size_t)p * kD], &V[il][(size_t)(p + 1) * kD]);
            const std::vector<float> kref32 = kref, vref32 = vref;
            if (cached)
              for (int j = 0; j < kD; ++j) kref[(size_t)j] = r16(kref[(size_t)j]), vref[(size_t)j] = r16(vref[(size_t)j]);
            s_kv.push_back((double)scale * dot(qrh, ke.data()));
            s_ref.push_back((double)scale * dot(qh, kref.data()));
            s_ref32.push_back((double)scale * dot(qh, kref32.data()));
            v_eng.push_back(ve);
            v_ref.push_back(vref);
            v_ref32.push_back(vref32);
          }
          // Engine output: softmax of its scores over its (rotated) values, rotated back.
          auto attend = [](const std::vector<double>& s, const std::vector<std::vector<float>>& vs) {
            const double mx = *std::max_element(s.begin(), s.end());
            double sum = 0;
            for (double x : s) sum += std::exp(x - mx);
            std::vector<double> o(kD, 0.0);
            for (size_t p = 0; p < s.size(); ++p)
              for (int j = 0; j < kD; ++j) o[(size_t)j] += std::exp(s[p] - mx) / sum * vs[p][(size_t)j];
            return o;
          };
          const std::vector<double> oe_rot = attend(s_kv, v_eng);
          std::vector<float> oe_rot_f(oe_rot.begin(), oe_rot.end());
          const std::vector<float> oe = rotate(W, oe_rot_f.data(), /*transpose=*/true);
          std::copy(oe.begin(), oe.end(), &out[(size_t)(i * kHeads + h) * kD]);
          if (!is_measured(0, p_q)) continue;
          auto add = [&](Expected& e, const std::vector<double>& sr, const std::vector<std::vector<float>>& vref) {
            for (size_t p = 0; p < sr.size(); ++p) {
              e.ss += sr[p] * sr[p];
              e.sn += (s_kv[p] - sr[p]) * (s_kv[p] - sr[p]);
            }
            e.n_scores += (long long)sr.size();
            const std::vector<double> orf = attend(sr, vref);
            for (int j = 0; j < kD; ++j) {
              e.os += orf[(size_t)j] * orf[(size_t)j];
              e.on += ((double)oe[(size_t)j] - orf[(size_t)j]) * ((double)oe[(size_t)j] - orf[(size_t)j]);
            }
          };
          add(ex[il], s_ref, v_ref);
          add(ex32[il], s_ref32, v_ref32);
        }
      }
      for (ppl::KvReport* r : {&report, &report32}) {
        r->on_qkv(il, l, n, seq.data(), pos.data(), q, k, v);
        r->on_attention(il, l, {n, seq.data(), pos.data(), n_cached.data(), qr.data(), kr.data(), vr.data(),
                                out.data(), &cache});
      }
      for (int i = 0; i < n; ++i) cache.store(0, il, b0 + i, &kr[(size_t)i * kD], &vr[(size_t)i * kD]);
    }
    cache.commit(0, b0 + n);
  }

  for (int il = 0; il < 2; ++il) {
    SCOPED_TRACE("layer " + std::to_string(il));
    for (const auto& [r, e] : {std::pair{&report, ex[il]}, std::pair{&report32, ex32[il]}}) {
      const ppl::LayerQuality& q = r->layers()[(size_t)il];
      EXPECT_EQ(q.n_queries, (long long)measured.size());
      EXPECT_EQ(q.n_scores, e.n_scores);
      EXPECT_NEAR(q.score_signal, e.ss, 1e-9 * e.ss);
      EXPECT_NEAR(q.score_noise, e.sn, 1e-6 * e.sn + 1e-12);
      EXPECT_NEAR(q.out_signal, e.os, 1e-9 * e.os);
      EXPECT_NEAR(q.out_noise, e.on, 1e-6 * e.on + 1e-12);
      EXPECT_NEAR(q.score_snr_db(), 10 * std::log10(e.ss / e.sn), 1e-4);
      EXPECT_NEAR(q.out_snr_db(), 10 * std::log10(e.os / e.on), 1e-4);
    }
    EXPECT_EQ(report.layers()[(size_t)il].type_k, il == 0 ? "q2_0" : "f16 ring");
  }
  // The global layer read q2_0 rows: a real loss, far below f16 rounding.
  EXPECT_LT(report.layers()[0].score_snr_db(), 40.0);
  // The sliding layer's rows are f16 of rotated rows: only rounding remains.
  EXPECT_GT(report.layers()[1].score_snr_db(), 50.0);
  // Totals and the table.
  const ppl::LayerQuality t = report.total();
  EXPECT_DOUBLE_EQ(t.score_signal, report.layers()[0].score_signal + report.layers()[1].score_signal);
  const std::string text = report.table("hand-built");
  EXPECT_NE(text.find("q2_0"), std::string::npos) << text;
  EXPECT_NE(text.find("all"), std::string::npos) << text;
  const std::string js = report.json("hand \"built\"");
  EXPECT_NE(js.find("\"setting\": \"hand \\\"built\\\"\""), std::string::npos) << js;
}

// One global layer of kHeads query heads over kKvHeads KV heads of kD values.
model::ModelConfig one_global_layer() {
  model::ModelConfig c;
  c.n_layer = 1;
  model::LayerConfig g;
  g.n_head = kHeads;
  g.n_head_kv = kKvHeads;
  g.head_dim = kD;
  c.layers = {g};
  return c;
}

// Without any error (an f32 cache, no rotation, observed rows equal to the
// kernels' rows) both SNRs are infinite.
TEST(KvReport, ExactCacheIsInfinite) {
  const model::ModelConfig c = one_global_layer();
  const model::LayerConfig& g = c.layers[0];
  const CpuFeatures cpu = detect_cpu();
  const quant::QuantTable table(cpu);
  kv::KvCacheConfig kc;
  kc.type_k = kc.type_v = kv::CacheType::F32;
  kc.n_ctx_seq = 4;
  kv::KvCache cache(c, kc, table);
  ppl::KvReport report(c, ppl::KvRefType::F32, [](int, int) { return true; });
  std::vector<float> q(kHeads * kD), k(kD), v(kD), out(kHeads * kD);
  std::vector<float> vs;
  for (int p = 0; p < 3; ++p) {
    for (int j = 0; j < kD; ++j) k[(size_t)j] = (float)(p + 1) * 0.25f * (j % 3), v[(size_t)j] = (float)(j - p);
    for (int j = 0; j < kHeads * kD; ++j) q[(size_t)j] = 0.1f * (float)j;
    vs.insert(vs.end(), v.begin(), v.end());
    // Exact attention of this position, computed the way the report does.
    for (int h = 0; h < kHeads; ++h) {
      std::vector<double> s;
      for (int pp = 0; pp <= p; ++pp) {
        std::vector<float> kk(kD);
        for (int j = 0; j < kD; ++j) kk[(size_t)j] = (float)(pp + 1) * 0.25f * (j % 3);
        s.push_back((double)g.kq_scale() * dot(&q[(size_t)h * kD], kk.data()));
      }
      const double mx = *std::max_element(s.begin(), s.end());
      double sum = 0;
      for (double& x : s) sum += (x = std::exp(x - mx));
      for (int j = 0; j < kD; ++j) {
        double o = 0;
        for (int pp = 0; pp <= p; ++pp) o += s[(size_t)pp] / sum * vs[(size_t)(pp * kD + j)];
        out[(size_t)(h * kD + j)] = (float)o;
      }
    }
    const int32_t seq = 0, pos = p;
    const int n_cached = p;
    report.on_qkv(0, g, 1, &seq, &pos, q.data(), k.data(), v.data());
    report.on_attention(0, g, {1, &seq, &pos, &n_cached, q.data(), k.data(), v.data(), out.data(), &cache});
    cache.store(0, 0, p, k.data(), v.data());
    cache.commit(0, p + 1);
  }
  const ppl::LayerQuality& lq = report.layers()[0];
  EXPECT_EQ(lq.score_noise, 0.0);
  EXPECT_TRUE(std::isinf(lq.score_snr_db()));
  // The output went through float once: only that rounding is left.
  EXPECT_GT(lq.out_snr_db(), 120.0);
  const std::string js = report.json("exact");
  EXPECT_NE(js.find("\"score_snr_db\": null"), std::string::npos) << js;
}

// Positions must continue their sequence; a new sequence starts at 0.
TEST(KvReport, RefusesOutOfOrderPositions) {
  const model::ModelConfig c = one_global_layer();
  const model::LayerConfig& g = c.layers[0];
  ppl::KvReport report(c, ppl::KvRefType::F16, [](int, int) { return false; });
  std::vector<float> q(kHeads * kD), k(kD), v(kD);
  const int32_t seq = 0;
  int32_t pos = 1;
  EXPECT_THROW(report.on_qkv(0, g, 1, &seq, &pos, q.data(), k.data(), v.data()), Error);
  pos = 0;
  EXPECT_NO_THROW(report.on_qkv(0, g, 1, &seq, &pos, q.data(), k.data(), v.data()));
  EXPECT_NO_THROW(report.on_qkv(0, g, 1, &seq, &pos, q.data(), k.data(), v.data()));  // restart
}

}  // namespace
