// The SIMD row kernels of the fused attention against a reference computed
// here in double precision from rows decoded by the codec (the definition of
// what a stored row means): q2_0 with several group sizes, f16 and f32, head
// dims 32..512, 1..9 query heads (tiles of 4 or 8 plus a remainder) and
// block lengths that are odd, even and longer than one accumulate tile.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <random>
#include <vector>

#include "attention/attention_kernels.h"
#include "attention/row_kernels.h"
#include "attention/row_kernels_impl.h"
#include "core/cpu_features.h"
#include "core/fp16.h"
#include "kv/cache_type.h"
#include "quant/quant.h"

namespace oscar::attention {
namespace {

const quant::QuantTable& table() {
  static const quant::QuantTable t(detect_cpu());
  return t;
}
// The attention kernels the CPU has, and the scalar table (every function
// on its generic path), side by side.
const AttentionKernels& cpu_kernels() {
  static const AttentionKernels k(detect_cpu());
  return k;
}
const AttentionKernels& scalar_kernels() {
  static const AttentionKernels k{CpuFeatures{}};
  return k;
}

struct Rows {
  kv::RowCodec codec;
  std::vector<uint8_t> bytes;
  std::vector<float> decoded;  // (n, d)
  size_t stride;
};

Rows make_rows(kv::CacheType t, int d, int g, int n, std::mt19937& rng) {
  Rows r{kv::RowCodec(t, d, table(), kv::Q2Params{0.96f, g}), {}, {}, 0};
  r.stride = r.codec.row_bytes() + 3;  // rows need not be packed
  r.bytes.assign(r.stride * (size_t)n, 0xAB);
  r.decoded.resize((size_t)n * d);
  std::normal_distribution<float> nd(0.3f, 1.5f);
  std::vector<float> x((size_t)d);
  for (int j = 0; j < n; ++j) {
    for (auto& v : x) v = nd(rng);
    r.codec.encode(x.data(), &r.bytes[(size_t)j * r.stride]);
    r.codec.decode(&r.bytes[(size_t)j * r.stride], &r.decoded[(size_t)j * d]);
  }
  return r;
}

// Scores and value sums a kernel produced, against double sums of the same
// rows as floats (row j at rows + j * rs): scores[h * ss + j] = scale q_h . x_j
// and acc[h * d + i] = acc0[h * d + i] + sum_j p[h * ps + j] x_j[i].
void expect_double_sums(const float* rows, size_t rs, int d, int n, const float* q, int heads, float scale,
                        const float* scores, size_t ss, const float* p, size_t ps, const float* acc0,
                        const float* acc, const std::string& where) {
  for (int h = 0; h < heads; ++h) {
    for (int j = 0; j < n; ++j) {
      double sum = 0, mag = 0;
      for (int i = 0; i < d; ++i) {
        const double t = (double)q[(size_t)h * d + i] * rows[(size_t)j * rs + i];
        sum += t;
        mag += std::fabs(t);
      }
      ASSERT_NEAR(scores[(size_t)h * ss + j], sum * scale, 1e-5 * mag * scale + 1e-7) << where << " h=" << h << " j=" << j;
    }
    for (int i = 0; i < d; ++i) {
      double a = acc0[(size_t)h * d + i], mag = std::fabs(a);
      for (int j = 0; j < n; ++j) {
        const double t = (double)p[(size_t)h * ps + j] * rows[(size_t)j * rs + i];
        a += t;
        mag += std::fabs(t);
      }
      ASSERT_NEAR(acc[(size_t)h * d + i], a, 1e-5 * mag + 1e-7) << where << " h=" << h << " i=" << i;
    }
  }
}

void check_with(const AttentionKernels& k, kv::CacheType t, int d, int g, int heads, int n, std::mt19937& rng) {
  const Rows r = make_rows(t, d, g, n, rng);
  std::normal_distribution<float> nd(0, 1);
  std::vector<float> q((size_t)heads * d);
  for (auto& v : q) v = nd(rng);
  const size_t stride = (size_t)n + 5;
  std::vector<float> scores((size_t)heads * stride, -7.0f), tmp((size_t)d);
  const GroupQuery gq{q.data(), heads, d};
  const float scale = 0.125f;
  score_rows(k, r.codec, r.bytes.data(), r.stride, n, gq, scale, scores.data(), stride, tmp.data());

  std::vector<float> p((size_t)heads * stride);
  for (auto& v : p) v = std::fabs(nd(rng));
  std::vector<float> acc((size_t)heads * d);
  for (auto& v : acc) v = nd(rng);
  const std::vector<float> acc0 = acc;
  accumulate_rows(k, r.codec, r.bytes.data(), r.stride, n, p.data(), stride, heads, acc.data(), tmp.data());

  const std::string where = std::string(k.name) + " type " + std::to_string((int)t) + " d=" + std::to_string(d) + " g=" +
                            std::to_string(g) + " heads=" + std::to_string(heads) + " n=" + std::to_string(n);
  expect_double_sums(r.decoded.data(), (size_t)d, d, n, q.data(), heads, scale, scores.data(), stride, p.data(), stride,
                     acc0.data(), acc.data(), where);
  for (int h = 0; h < heads; ++h)
    EXPECT_EQ(scores[(size_t)h * stride + n], -7.0f) << where << ": wrote past the block";
}

// The scalar table and the CPU's, each against the decoded rows.
void check(kv::CacheType t, int d, int g, int heads, int n, std::mt19937& rng) {
  for (const AttentionKernels* k : {&scalar_kernels(), &cpu_kernels()}) check_with(*k, t, d, g, heads, n, rng);
}

TEST(RowKernels, Q2MatchesDecodedRows) {
  std::mt19937 rng(5);
  for (int d : {32, 64, 128, 256, 512})
    for (int g : {4, 32, 64, d})
      if (g <= d && d % g == 0)
        for (int heads : {1, 2, 4, 5, 9})
          for (int n : {1, 2, 7, 32, 70, 130}) check(kv::CacheType::Q2_0, d, g, heads, n, rng);
}

// q2_0 scores with the query's integer form (GroupQuery::q2_int): on CPUs
// with AVX512-VNNI, integer dot products against the query rounded to
// 24 bits, for groups of up to 8 heads in one call (larger ones use the float
// kernels).
// Its error bound is the float kernels' plus that rounding:
// scale * (max |q_h| / (127 * 2^16)) / 2 * sum |x|. A query with one outlier
// channel and an all-zero head are among the cases; one Q2IntQuery serves
// several blocks and is remade when the scale or the group size changes.
TEST(RowKernels, Q2IntegerQueryScoresMatchDecodedRows) {
  std::mt19937 rng(12);
  std::normal_distribution<float> nd(0, 1);
  const bool vnni = detect_cpu().avx512vnni;
  Q2IntQuery iq[3];  // one per 4 heads
  for (int d : {128, 256, 512})
    for (int g : {64, 128, 256, 512}) {
      if (g > d || d % g != 0) continue;
      for (int heads : {1, 2, 3, 4, 5, 8, 9}) {
        const int n = 2 * heads + 1;  // odd and even block lengths
        const Rows r = make_rows(kv::CacheType::Q2_0, d, g, 2 * n, rng);  // two blocks
        std::vector<float> q((size_t)heads * d);
        for (auto& v : q) v = nd(rng);
        q[3] = 900.0f;                                                     // an outlier channel
        if (heads > 2) std::fill(q.begin() + d, q.begin() + 2 * d, 0.0f);  // an all-zero head
        const float scale0 = 0.0625f * (float)heads;
        for (Q2IntQuery& one : iq) one.forget();  // a new query
        const GroupQuery gq{q.data(), heads, d, iq};
        const size_t ss = (size_t)n + 3;
        std::vector<float> scores((size_t)heads * ss, -7.0f), tmp((size_t)d);
        for (int blk = 0; blk < 3; ++blk) {  // blocks of rows, one prepared query; the last with another scale
          const float scale = blk < 2 ? scale0 : 2.5f * scale0;
          const uint8_t* rows = r.bytes.data() + (size_t)(blk % 2) * n * r.stride;
          score_rows(cpu_kernels(), r.codec, rows, r.stride, n, gq, scale, scores.data(), ss, tmp.data());
          const std::string where = "d=" + std::to_string(d) + " g=" + std::to_string(g) +
                                    " heads=" + std::to_string(heads) + " block " + std::to_string(blk);
          if (vnni && g % 128 == 0 && heads <= detail::kQ2IntCallHeads) {
            EXPECT_EQ(iq[0].g, g) << where << ": the integer kernels were not used";
            if (heads > 4) {
              EXPECT_EQ(iq[1].g, g) << where << ": heads 4.. not through the integer kernels";
            }
          }
          for (int h = 0; h < heads; ++h) {
            float mx = 0;
            for (int i = 0; i < d; ++i) mx = std::max(mx, std::fabs(q[(size_t)h * d + i]));
            for (int j = 0; j < n; ++j) {
              const float* x = &r.decoded[(size_t)((blk % 2) * n + j) * d];
              double sum = 0, mag = 0, xabs = 0;
              for (int i = 0; i < d; ++i) {
                const double t = (double)q[(size_t)h * d + i] * x[i];
                sum += t;
                mag += std::fabs(t);
                xabs += std::fabs(x[i]);
              }
              const double tol = (1e-5 * mag + 0.5 * mx / (127.0 * 65536.0) * xabs) * scale + 1e-7;
              ASSERT_NEAR(scores[(size_t)h * ss + j], sum * scale, tol) << where << " h=" << h << " j=" << j;
            }
            EXPECT_EQ(scores[(size_t)h * ss + n], -7.0f) << where << ": wrote past the block";
          }
        }
      }
    }
}

#if defined(OSCAR_X86)
// The integer q2_0 kernel sets this CPU has, by name: AVX512-VNNI with VBMI
// (the value sums need it), and AMX-INT8 where the OS lets this process use it.
std::vector<std::pair<const char*, detail::IntRowKernels>> int_sets() {
  const CpuFeatures cpu = detect_cpu();
  std::vector<std::pair<const char*, detail::IntRowKernels>> sets;
  if (!cpu.avx512vnni || !cpu.avx512vbmi || !cpu.has_avx512_family()) return sets;
  detail::IntRowKernels vnni = detail::avx512vnni_row_kernels();
  vnni.accumulate_q2 = detail::avx512vbmi_q2_accumulate_kernel();
  sets.emplace_back("avx512vnni", vnni);
  if (cpu.amx_int8 && cpu.gfni) sets.emplace_back("amx", detail::amx_row_kernels());
  return sets;
}
#endif

// q2_0 value sums by integer dot products, every integer set this CPU has
// (AVX512-VNNI + VBMI; AMX-INT8) called directly: each row's weight p_j * s_j
// is rounded to 24 bits of the group's largest weight, so the bound is the
// float kernels' plus 0.5 * step * sum_j |c_j[i]| per value (c_j[i] <= 3,
// step = max |p s| / (127 * 2^16) per group and head). Block lengths that
// are not a multiple of the 4 rows one instruction sums, and all-zero and
// one-dominant weights. (The dispatch uses one set for groups of up to 8
// heads, so the other tests and test_fused_vs_reference cover it through
// score_rows/accumulate_rows too.)
TEST(RowKernels, Q2IntegerValueSumsMatchDecodedRows) {
#if defined(OSCAR_X86)
  const auto sets = int_sets();
  if (sets.empty()) GTEST_SKIP() << "needs AVX512-VNNI and VBMI";
  for (const auto& [name, set] : sets) {
    const detail::AccumulateKernel kernel = set.accumulate_q2;
    std::mt19937 rng(21);
    std::normal_distribution<float> nd(0, 1);
    int cases = 0;
    for (int d : {64, 128, 256, 512})
      for (int g : {64, 128, 256, 512}) {
        if (g > d || d % g != 0) continue;
        for (int heads = 1; heads <= detail::kQ2IntCallHeads; ++heads)
          for (int n : {1, 3, 4, 37, 64, detail::kMaxTileRows}) {
            const Rows r = make_rows(kv::CacheType::Q2_0, d, g, n, rng);
            const size_t ps = (size_t)n + 2;
            std::vector<float> p((size_t)heads * ps);
            for (auto& v : p) v = std::fabs(nd(rng));
            if (heads > 1) std::fill(p.begin() + (long)ps, p.begin() + (long)(2 * ps), 0.0f);  // an all-zero head
            if (heads > 2) {                                                                     // one row dominates
              for (size_t j = 0; j < ps; ++j) p[2 * ps + j] = 1e-4f * p[2 * ps + j];
              p[2 * ps + (size_t)n / 2] = 50.0f;
            }
            std::vector<float> acc((size_t)heads * d);
            for (auto& v : acc) v = nd(rng);
            const std::vector<float> acc0 = acc;
            const detail::RowBlock b{r.bytes.data(), r.stride, n, d, g};
            kernel(b, p.data(), ps, heads, acc.data(), nullptr);
            const std::string where = std::string(name) + " d=" + std::to_string(d) + " g=" + std::to_string(g) +
                                      " heads=" + std::to_string(heads) + " n=" + std::to_string(n);
            for (int h = 0; h < heads; ++h)
              for (int i = 0; i < d; ++i) {
                const int gi = i / g;
                double a = acc0[(size_t)h * d + i], mag = std::fabs(a), wmax = 0;
                for (int j = 0; j < n; ++j) {
                  const float* x = &r.decoded[(size_t)j * d];
                  const double t = (double)p[(size_t)h * ps + j] * x[i];
                  a += t;
                  mag += std::fabs(t);
                  // The group's scale s: the f16 at the start of the group's bytes.
                  uint16_t s16;
                  std::memcpy(&s16, &r.bytes[(size_t)j * r.stride + (size_t)gi * (4 + g / 4)], 2);
                  wmax = std::max(wmax, p[(size_t)h * ps + j] * std::fabs((double)fp16_to_f32(s16)));
                }
                const double tol = 1e-5 * mag + 0.5 * wmax / (127.0 * 65536.0) * 3.0 * n + 1e-7;
                ASSERT_NEAR(acc[(size_t)h * d + i], a, tol) << where << " h=" << h << " i=" << i;
              }
            ++cases;
          }
      }
    EXPECT_GT(cases, 100) << name;
  }
#else
  GTEST_SKIP() << "x86-64 only";
#endif
}

// The AMX kernels multiply the same digits by the same codes as the
// AVX512-VNNI ones and share their float epilogue, so their scores and value
// sums must be those kernels' bit for bit: integer sums have no rounding to
// differ in. Every shape the dispatch gives them (1-8 heads, head dims and
// group sizes up to 512, blocks from 1 row to kMaxTileRows, partial 16- and
// 64-row steps).
TEST(RowKernels, AmxKernelsGiveTheVnniKernelsSumsBitForBit) {
#if defined(OSCAR_X86)
  const auto sets = int_sets();
  if (sets.size() < 2) GTEST_SKIP() << "needs AMX-INT8 (and the OS's permission) besides AVX512-VNNI";
  const detail::IntRowKernels& vnni = sets[0].second;
  const detail::IntRowKernels& amx = sets[1].second;
  std::mt19937 rng(33);
  std::normal_distribution<float> nd(0, 1);
  int scored = 0, summed = 0;
  for (int d : {128, 256, 512})
    for (int g : {64, 128, 256, 512}) {
      if (g > d || d % g != 0) continue;
      for (int heads = 1; heads <= detail::kQ2IntCallHeads; ++heads)
        for (int n : {1, 5, 16, 17, 63, 64, 65, 100, detail::kMaxTileRows}) {
          const Rows r = make_rows(kv::CacheType::Q2_0, d, g, n, rng);
          const std::string where = "d=" + std::to_string(d) + " g=" + std::to_string(g) +
                                    " heads=" + std::to_string(heads) + " n=" + std::to_string(n);
          const detail::RowBlock b{r.bytes.data(), r.stride, n, d, g};
          std::vector<float> q((size_t)heads * d);
          for (auto& v : q) v = nd(rng);
          if (vnni.takes_q2(d, g, heads)) {
            ASSERT_TRUE(amx.takes_q2(d, g, heads)) << where;
            Q2IntQuery iq[2];
            detail::Q2IntView views[2];
            for (int c = 0; 4 * c < heads; ++c) {
              detail::prepare_q2_int_query(q.data() + (size_t)4 * c * d, std::min(4, heads - 4 * c), d, g, 0.3f, true,
                                           iq[c]);
              views[c] = {iq[c].digits.data(), iq[c].tile_digits.data(), iq[c].lo_weight.data(),
                          iq[c].out_scale.data()};
            }
            const size_t ss = (size_t)n + 1;
            std::vector<float> want((size_t)heads * ss, -7.0f), got = want;
            vnni.score_q2(b, views, heads, want.data(), ss);
            amx.score_q2(b, views, heads, got.data(), ss);
            for (size_t i = 0; i < want.size(); ++i)
              ASSERT_EQ(std::memcmp(&want[i], &got[i], sizeof(float)), 0)
                  << where << ": score " << i << " " << got[i] << " against " << want[i];
            ++scored;
          }
          if (vnni.accumulates_q2(d, g, heads)) {
            ASSERT_TRUE(amx.accumulates_q2(d, g, heads)) << where;
            const size_t ps = (size_t)n + 3;
            std::vector<float> p((size_t)heads * ps), want((size_t)heads * d);
            for (auto& v : p) v = std::fabs(nd(rng));
            for (auto& v : want) v = nd(rng);
            std::vector<float> got = want;
            vnni.accumulate_q2(b, p.data(), ps, heads, want.data(), nullptr);
            amx.accumulate_q2(b, p.data(), ps, heads, got.data(), nullptr);
            for (size_t i = 0; i < want.size(); ++i)
              ASSERT_EQ(std::memcmp(&want[i], &got[i], sizeof(float)), 0)
                  << where << ": value sum " << i << " " << got[i] << " against " << want[i];
            ++summed;
          }
        }
    }
  EXPECT_GT(scored, 300);
  EXPECT_GT(summed, 500);
  // A set of 16 rows' codes must fit one of the AMX score kernel's batches.
  EXPECT_TRUE(amx.takes_q2(detail::kAmxMaxScoreDim, 128, 4));
  EXPECT_FALSE(amx.takes_q2(2 * detail::kAmxMaxScoreDim, 128, 4));
  EXPECT_TRUE(vnni.takes_q2(2 * detail::kAmxMaxScoreDim, 128, 4));
#else
  GTEST_SKIP() << "x86-64 only";
#endif
}

#if defined(OSCAR_X86) || defined(__aarch64__)
#define OSCAR_TEST_SIMD_SETS 1
// Every float kernel set this CPU has: AVX2; AVX-512 with 16 floats per
// vector and with 8; NEON on AArch64.
std::vector<std::pair<const char*, detail::RowKernels>> simd_sets() {
  std::vector<std::pair<const char*, detail::RowKernels>> sets;
#if defined(__aarch64__)
  sets.emplace_back("neon", detail::neon_row_kernels());
#else
  if (__builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma") && __builtin_cpu_supports("f16c")) {
    sets.emplace_back("avx2", detail::avx2_row_kernels());
    if (__builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw") && __builtin_cpu_supports("avx512vl") &&
        __builtin_cpu_supports("avx512dq")) {
      sets.emplace_back("avx512", detail::avx512_row_kernels());
      sets.emplace_back("avx512-narrow", detail::avx512_narrow_row_kernels());
    }
  }
#endif
  return sets;
}
#endif

// The tests above go through the dispatch, which picks one set per shape.
// Here every kernel set this CPU has (AVX2; AVX-512 with 16 floats per
// vector and with 8) is called directly on every shape it takes, against
// double sums of the decoded rows.
TEST(RowKernels, EverySimdSetMatchesDecodedRows) {
#if defined(OSCAR_TEST_SIMD_SETS)
  const std::vector<std::pair<const char*, detail::RowKernels>> sets = simd_sets();
  if (sets.empty()) GTEST_SKIP() << "no SIMD row kernels on this CPU";
  std::mt19937 rng(10);
  std::normal_distribution<float> nd(0, 1);
  std::vector<int> checked(sets.size(), 0);
  // Runs one set's tiles over all heads and compares with the decoded rows.
  auto run = [&](size_t si, detail::ScoreKernel score, detail::AccumulateKernel acc, const detail::RowBlock& b,
                 const float* decoded, size_t rs, int heads, const std::string& what) {
    const detail::RowKernels& k = sets[si].second;
    const int d = b.d, n = b.n;
    std::vector<float> q((size_t)heads * d), p((size_t)heads * n), s((size_t)heads * n), a((size_t)heads * d, 0.5f);
    for (auto& v : q) v = nd(rng);
    for (auto& v : p) v = std::fabs(nd(rng));
    const std::vector<float> a0 = a;
    std::vector<float> scratch((size_t)detail::kMaxTileHeads * (detail::kMaxTileRows + 1) * detail::kMaxGroups);
    for (int h0 = 0; h0 < heads; h0 += k.max_heads) {
      const int hn = std::min(k.max_heads, heads - h0);
      score(b, q.data() + (size_t)h0 * d, hn, 0.25f, s.data() + (size_t)h0 * n, n);
      acc(b, p.data() + (size_t)h0 * n, n, hn, a.data() + (size_t)h0 * d, scratch.data());
    }
    expect_double_sums(decoded, rs, d, n, q.data(), heads, 0.25f, s.data(), n, p.data(), n, a0.data(), a.data(),
                       std::string(sets[si].first) + " " + what + " d=" + std::to_string(d) +
                           " g=" + std::to_string(b.g) + " heads=" + std::to_string(heads));
    ++checked[si];
  };
  for (kv::CacheType t : {kv::CacheType::F16, kv::CacheType::Q2_0})
    for (int d : {24, 64, 128, 512})
      for (int g : {0, 32, 64, 128, 512}) {
        if ((t == kv::CacheType::F16) != (g == 0) || (g > 0 && (g > d || d % g != 0))) continue;
        const int n = 37;
        const Rows r = make_rows(t, d, g, n, rng);
        const detail::RowBlock b{r.bytes.data(), r.stride, n, d, g};
        for (size_t si = 0; si < sets.size(); ++si) {
          const detail::RowKernels& k = sets[si].second;
          const bool f16 = t == kv::CacheType::F16;
          if (f16 ? !k.takes_float(d) : !k.takes_q2(d, g)) continue;
          for (int heads : {1, 3, 5, 8, 9})
            run(si, f16 ? k.score_f16 : k.score_q2, f16 ? k.accumulate_f16 : k.accumulate_q2, b, r.decoded.data(),
                (size_t)d, heads, f16 ? "f16" : "q2_0");
        }
      }
  // f32 rows (the batch's own keys and values), rows wider apart than d.
  for (int d : {24, 128}) {
    const int n = 29;
    const size_t rs = (size_t)d + 8;
    std::vector<float> rows((size_t)n * rs);
    for (auto& v : rows) v = nd(rng);
    const detail::RowBlock b{reinterpret_cast<const uint8_t*>(rows.data()), rs * sizeof(float), n, d, 0};
    for (size_t si = 0; si < sets.size(); ++si)
      if (sets[si].second.takes_float(d))
        for (int heads : {1, 5, 8, 9})
          run(si, sets[si].second.score_f32, sets[si].second.accumulate_f32, b, rows.data(), rs, heads, "f32");
  }
  for (size_t si = 0; si < sets.size(); ++si) EXPECT_GT(checked[si], 0) << sets[si].first << " was never run";
#else
  GTEST_SKIP() << "x86-64 only";
#endif
}

TEST(RowKernels, F16MatchesDecodedRows) {
  std::mt19937 rng(6);
  for (int d : {8, 64, 128, 256, 512, 20})
    for (int heads : {1, 3, 4, 8})
      for (int n : {1, 2, 33, 65}) check(kv::CacheType::F16, d, 0, heads, n, rng);
}

// f32 rows (the batch's own keys and values) through score_rows_f32 /
// accumulate_rows_f32, rows spaced wider than d like a token's row of all KV
// heads, against double sums of the same floats.
TEST(RowKernels, F32RowsMatchDoubleSums) {
  std::mt19937 rng(11);
  std::normal_distribution<float> nd(0.2f, 1.3f);
  for (int d : {8, 64, 128, 512, 20})
    for (int heads : {1, 2, 5, 8, 9})
      for (int n : {1, 2, 31, 32}) {
        const size_t rs = (size_t)d * 3 + 4;  // floats between rows
        std::vector<float> rows(rs * (size_t)n), q((size_t)heads * d), acc((size_t)heads * d);
        for (auto& v : rows) v = nd(rng);
        for (auto& v : q) v = nd(rng);
        for (auto& v : acc) v = nd(rng);
        const size_t stride = (size_t)n + 3;
        std::vector<float> scores((size_t)heads * stride, -7.0f), p((size_t)heads * stride);
        for (auto& v : p) v = std::fabs(nd(rng));
        const std::vector<float> acc0 = acc;
        score_rows_f32(cpu_kernels(), rows.data(), rs, n, GroupQuery{q.data(), heads, d}, 0.5f, scores.data(), stride);
        accumulate_rows_f32(cpu_kernels(), rows.data(), rs, n, p.data(), stride, heads, d, acc.data());
        const std::string where = "d=" + std::to_string(d) + " heads=" + std::to_string(heads) + " n=" + std::to_string(n);
        expect_double_sums(rows.data(), rs, d, n, q.data(), heads, 0.5f, scores.data(), stride, p.data(), stride,
                           acc0.data(), acc.data(), where);
        for (int h = 0; h < heads; ++h)
          EXPECT_EQ(scores[(size_t)h * stride + n], -7.0f) << where << ": wrote past the block";
      }
}

TEST(RowKernels, OtherTypesUseTheGenericPath) {
  std::mt19937 rng(7);
  for (auto t : {kv::CacheType::Q8_0, kv::CacheType::Q4_0, kv::CacheType::BF16, kv::CacheType::F32})
    check(t, 128, 0, 3, 9, rng);
}

void check_exp(const std::vector<float>& s, const std::vector<float>& p, float m, float sum, int n) {
  double want_sum = 0;
  for (int j = 0; j < n; ++j) {
    const double want = std::exp((double)(s[(size_t)j] - m));  // the float difference, as the kernel forms it
    want_sum += want;
    // Results below float's normal range may flush to 0.
    ASSERT_NEAR(p[(size_t)j], want, 4e-7 * want + 1.2e-38) << "n=" << n << " s-m=" << s[(size_t)j] - m;
  }
  EXPECT_NEAR(sum, want_sum, 1e-6 * want_sum) << n;
}

TEST(RowKernels, ExpShiftedIsWithinAFewUlpOfStdExp) {
  std::mt19937 rng(8);
  std::uniform_real_distribution<float> u(-95.0f, 5.0f);
  for (int n : {1, 7, 8, 33, 1000}) {
    std::vector<float> s((size_t)n), p((size_t)n, -1.0f);
    for (auto& v : s) v = u(rng);
    if (n > 1) s[0] = -INFINITY;  // a masked score
    float m = -INFINITY;
    for (float v : s) m = std::max(m, v);
    // The running maximum comes in below, at or above the block's.
    for (float m_in : {-INFINITY, m - 1.0f, m, m + 2.5f}) {
      float m_new = NAN;
      const float sum = exp_shifted(cpu_kernels(), s.data(), m_in, p.data(), n, &m_new);
      ASSERT_EQ(m_new, std::max(m, m_in)) << n;
      check_exp(s, p, m_new, sum, n);
    }
  }
}
// The same for the exp kernel of every SIMD set this CPU has, called
// directly (the test above sees only the one the dispatch picks).
TEST(RowKernels, EverySimdSetsExpShiftedIsWithinAFewUlpOfStdExp) {
#if defined(OSCAR_TEST_SIMD_SETS)
  const std::vector<std::pair<const char*, detail::RowKernels>> sets = simd_sets();
  if (sets.empty()) GTEST_SKIP() << "no SIMD row kernels on this CPU";
  std::mt19937 rng(9);
  std::uniform_real_distribution<float> u(-95.0f, 5.0f);
  for (const auto& [name, set] : sets) {
    ASSERT_NE(set.exp_shifted, nullptr) << name;
    for (int n : {1, 7, 8, 15, 16, 17, 32, 33, 1000}) {
      std::vector<float> s((size_t)n), p((size_t)n + 1, -1.0f);
      for (auto& v : s) v = u(rng);
      if (n > 1) s[0] = -INFINITY;
      float m = -INFINITY;
      for (float v : s) m = std::max(m, v);
      for (float m_in : {-INFINITY, m - 1.0f, m, m + 2.5f}) {
        float m_new = NAN;
        const float sum = set.exp_shifted(s.data(), m_in, p.data(), n, &m_new);
        ASSERT_EQ(m_new, std::max(m, m_in)) << name << " n=" << n;
        check_exp(s, p, m_new, sum, n);
        EXPECT_EQ(p[(size_t)n], -1.0f) << name << ": wrote past the end, n=" << n;
      }
    }
  }
#else
  GTEST_SKIP() << "x86-64 only";
#endif
}

// Several heads' blocks at once, as the fused attention asks for them:
// each head's weights, maximum and sum must be exactly what a call for that
// head alone gives (the same arithmetic, only interleaved), and nothing
// between the heads' rows may be written. exp_heads is the kernel under test,
// exp_one the one-head kernel it must agree with.
template <class ExpHeads, class ExpOne>
void check_exp_heads(const char* name, ExpHeads exp_heads, ExpOne exp_one) {
  std::mt19937 rng(10);
  std::uniform_real_distribution<float> u(-95.0f, 5.0f);
  for (int heads : {1, 2, 3, 4, 5, 8, 9})
    for (int n : {1, 7, 16, 33, 128}) {
      const size_t stride = (size_t)n + 3;  // a gap after each head's rows
      std::vector<float> s((size_t)heads * stride), p(s.size(), -1.0f), m((size_t)heads), m_new((size_t)heads),
          sums((size_t)heads);
      for (auto& v : s) v = u(rng);
      for (int h = 0; h < heads; ++h) {
        if (n > 1) s[(size_t)h * stride + (size_t)h % n] = -INFINITY;  // a masked score
        float mx = -INFINITY;
        for (int j = 0; j < n; ++j) mx = std::max(mx, s[(size_t)h * stride + j]);
        const float m_in[] = {-INFINITY, mx - 1.0f, mx, mx + 2.5f};
        m[(size_t)h] = m_in[h % 4];
      }
      exp_heads(s.data(), stride, heads, m.data(), p.data(), n, m_new.data(), sums.data());
      for (int h = 0; h < heads; ++h) {
        std::vector<float> want((size_t)n);
        float want_m = NAN;
        const float want_sum = exp_one(s.data() + (size_t)h * stride, m[(size_t)h], want.data(), n, &want_m);
        ASSERT_EQ(m_new[(size_t)h], want_m) << name << " heads=" << heads << " n=" << n << " h=" << h;
        ASSERT_EQ(sums[(size_t)h], want_sum) << name << " heads=" << heads << " n=" << n << " h=" << h;
        for (int j = 0; j < n; ++j)
          ASSERT_EQ(p[(size_t)h * stride + j], want[(size_t)j]) << name << " heads=" << heads << " n=" << n << " h=" << h
                                                                << " j=" << j;
        for (size_t j = (size_t)n; j < stride; ++j)
          ASSERT_EQ(p[(size_t)h * stride + j], -1.0f) << name << ": wrote between heads, n=" << n;
      }
    }
}

TEST(RowKernels, ExpShiftedHeadsGivesEachHeadWhatExpShiftedGivesIt) {
  for (const AttentionKernels* k : {&scalar_kernels(), &cpu_kernels()})
    check_exp_heads(
        k->name,
        [k](const float* s, size_t stride, int heads, const float* m, float* p, int n, float* m_new, float* sums) {
          exp_shifted_heads(*k, s, stride, heads, m, p, n, m_new, sums);
        },
        [k](const float* s, float m, float* p, int n, float* m_new) { return exp_shifted(*k, s, m, p, n, m_new); });
}
TEST(RowKernels, EverySimdSetsExpShiftedHeadsGivesEachHeadWhatItsExpShiftedGivesIt) {
#if defined(OSCAR_TEST_SIMD_SETS)
  const std::vector<std::pair<const char*, detail::RowKernels>> sets = simd_sets();
  if (sets.empty()) GTEST_SKIP() << "no SIMD row kernels on this CPU";
  for (const auto& [name, set] : sets) {
    ASSERT_NE(set.exp_shifted_heads, nullptr) << name;
    check_exp_heads(name, set.exp_shifted_heads, set.exp_shifted);
  }
#else
  GTEST_SKIP() << "x86-64 only";
#endif
}

TEST(RowKernels, ShapesTheSimdKernelsTake) {
  detail::RowKernels k;
  k.score_f16 = k.score_q2 = [](const detail::RowBlock&, const float*, int, float, float*, size_t) {};
  k.width = 8;
  EXPECT_TRUE(k.takes_q2(128, 128));
  EXPECT_TRUE(k.takes_q2(512, 32));
  EXPECT_FALSE(k.takes_q2(128, 16));   // quarters of 4 codes: not a whole vector
  EXPECT_FALSE(k.takes_q2(1024, 32));  // more groups than the scratch holds
  EXPECT_TRUE(k.takes_float(64));
  EXPECT_FALSE(k.takes_float(20));
  k.width = 16;
  EXPECT_TRUE(k.takes_q2(128, 128));
  EXPECT_TRUE(k.takes_q2(512, 64));
  EXPECT_FALSE(k.takes_q2(512, 32));  // quarters of 8 codes
  EXPECT_TRUE(k.takes_float(128));
  EXPECT_FALSE(k.takes_float(24));
  k.score_f16 = k.score_q2 = nullptr;  // no kernels on this CPU
  EXPECT_FALSE(k.takes_float(128));
  EXPECT_FALSE(k.takes_q2(128, 128));
}

}  // namespace
}  // namespace oscar::attention
