// The matmul driver (threads, row/column tiling, activation conversion)
// against two references: the scalar tile kernel of the same type applied
// element by element, and a double-precision product of the dequantized
// weights with the unquantized activations.
#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <cmath>
#include <random>
#include <vector>

#include "core/error.h"
#include "kernels/matmul.h"

namespace oscar::kernels {
namespace {

const TensorType kAllTypes[] = {TensorType::F32,  TensorType::F16,  TensorType::BF16,
                                TensorType::Q4_0, TensorType::Q4_1, TensorType::Q5_0,
                                TensorType::Q5_1, TensorType::Q8_0, TensorType::Q2_K,
                                TensorType::Q3_K, TensorType::Q4_K, TensorType::Q5_K,
                                TensorType::Q6_K};

TEST(Matmul, EveryWeightTypeIsRegistered) {
  quant::QuantTable table(detect_cpu());
  for (TensorType t : kAllTypes) EXPECT_NE(table.find(t), nullptr) << type_name(t);
  EXPECT_EQ(table.find(TensorType::IQ2_XXS), nullptr);
  EXPECT_THROW(table.get(TensorType::IQ2_XXS, "blk.0.ffn_up.weight"), Error);
}

struct Case {
  int64_t rows, cols, n_cols;
  int threads;
};

void check_type(const quant::QuantTable& table, TensorType t, const Case& cs) {
  const quant::QuantTraits* q = table.find(t);
  if (!q) GTEST_SKIP() << type_name(t) << " not registered yet";
  std::mt19937 rng(1234 + (int)t);
  std::normal_distribution<float> nd(0.0f, 1.0f);
  std::vector<float> wf((size_t)(cs.rows * cs.cols)), x((size_t)(cs.n_cols * cs.cols));
  for (auto& v : wf) v = nd(rng);
  for (auto& v : x) v = nd(rng);
  const size_t rb = *row_bytes(t, (uint64_t)cs.cols);
  std::vector<uint8_t> wq(rb * (size_t)cs.rows);
  for (int64_t r = 0; r < cs.rows; ++r) q->quantize(&wf[(size_t)(r * cs.cols)], &wq[(size_t)r * rb], cs.cols);
  std::vector<float> wd((size_t)(cs.rows * cs.cols));
  for (int64_t r = 0; r < cs.rows; ++r) q->dequantize(&wq[(size_t)r * rb], &wd[(size_t)(r * cs.cols)], cs.cols);

  WeightMatrix w{q, wq.data(), cs.rows, cs.cols, rb};
  ThreadPool pool(cs.threads);
  MatmulScratch scratch;
  std::vector<float> y((size_t)(cs.n_cols * cs.rows), NAN);
  matmul(w, x.data(), (size_t)cs.cols, cs.n_cols, y.data(), (size_t)cs.rows, pool, scratch);

  const size_t ab = *row_bytes(q->act_type, (uint64_t)cs.cols);
  std::vector<uint8_t> act(ab);
  for (int64_t c = 0; c < cs.n_cols; ++c) {
    q->quantize_act(&x[(size_t)(c * cs.cols)], act.data(), cs.cols);
    for (int64_t r = 0; r < cs.rows; ++r) {
      float ref1;
      q->dot_ref(cs.cols, &wq[(size_t)r * rb], rb, 1, act.data(), ab, 1, &ref1, 1);
      double ref2 = 0, mag = 0;
      for (int64_t k = 0; k < cs.cols; ++k) {
        ref2 += (double)wd[(size_t)(r * cs.cols + k)] * x[(size_t)(c * cs.cols + k)];
        mag += std::fabs((double)wd[(size_t)(r * cs.cols + k)] * x[(size_t)(c * cs.cols + k)]);
      }
      const float got = y[(size_t)(c * cs.rows + r)];
      ASSERT_NEAR(got, ref1, 1e-4 * mag + 1e-5) << type_name(t) << " r=" << r << " c=" << c;
      // Activation rounding (8-bit for quantized types) bounds the second check.
      const double tol = (q->act_type == TensorType::F32 ? 1e-5 : 2e-2) * mag + 1e-5;
      ASSERT_NEAR(got, ref2, tol) << type_name(t) << " r=" << r << " c=" << c;
    }
  }
}

TEST(Matmul, AllTypesGemvAndGemmMatchReferences) {
  quant::QuantTable table(detect_cpu());
  // The last case has rows long enough that matmul splits k into panels for
  // every activation format (f32, Q8_0 and Q8_K) and sums the panels.
  // {150, 768, 20} takes the float panel GEMM through several row tiles, a
  // row tail, three k panels and a partial column group.
  const Case cases[] = {{1, 256, 1, 1}, {37, 512, 1, 2}, {19, 256, 13, 3}, {64, 768, 70, 2},
                        {20, 8448, 66, 2}, {150, 768, 20, 2}};
  for (TensorType t : kAllTypes)
    for (const Case& cs : cases) {
      SCOPED_TRACE(type_name(t) + " rows=" + std::to_string(cs.rows) + " cols=" +
                   std::to_string(cs.cols) + " n=" + std::to_string(cs.n_cols));
      check_type(table, t, cs);
    }
}

TEST(Matmul, RejectsRowLengthNotMultipleOfBlock) {
  quant::QuantTable table(detect_cpu());
  const quant::QuantTraits* q = table.find(TensorType::Q8_0);
  if (!q) GTEST_SKIP() << "q8_0 not registered yet";
  std::vector<uint8_t> wq(64);
  WeightMatrix w{q, wq.data(), 1, 40, 64};
  ThreadPool pool(1);
  MatmulScratch scratch;
  std::vector<float> x(40), y(1);
  EXPECT_THROW(matmul(w, x.data(), 40, 1, y.data(), 1, pool, scratch), Error);
}

// A quantized matrix of random weights, kept with its bytes.
struct OwnedMatrix {
  std::vector<uint8_t> bytes;
  WeightMatrix w;
};

OwnedMatrix random_matrix(const quant::QuantTable& table, TensorType t, int64_t rows, int64_t cols,
                          std::mt19937& rng) {
  const quant::QuantTraits& q = table.get(t);
  const size_t rb = *row_bytes(t, (uint64_t)cols);
  OwnedMatrix m{std::vector<uint8_t>(rb * (size_t)rows), {}};
  std::normal_distribution<float> nd(0, 1);
  std::vector<float> row((size_t)cols);
  for (int64_t r = 0; r < rows; ++r) {
    for (auto& v : row) v = nd(rng);
    q.quantize(row.data(), &m.bytes[(size_t)r * rb], cols);
  }
  m.w = WeightMatrix{&q, m.bytes.data(), rows, cols, rb};
  return m;
}

// Several products with one input must give exactly what one matmul per
// matrix gives: in one region (same activation format: Q4_K and Q6_K both
// use Q8_K) and through the fallback (mixed formats, several columns).
TEST(Matmul, SharedInputMatchesOneMatmulPerMatrix) {
  quant::QuantTable table(detect_cpu());
  std::mt19937 rng(3);
  const int64_t cols = 512;
  struct Setup {
    std::vector<TensorType> types;
    int64_t n_cols;
  };
  const Setup setups[] = {{{TensorType::Q4_K, TensorType::Q4_K, TensorType::Q6_K}, 1},
                          {{TensorType::Q4_K, TensorType::Q6_K}, 1},
                          {{TensorType::Q8_0, TensorType::Q4_0, TensorType::Q5_0}, 1},
                          {{TensorType::F16, TensorType::Q4_K, TensorType::Q6_K}, 1},
                          {{TensorType::Q4_K, TensorType::Q6_K}, 3}};
  for (int threads : {1, 2, 3})
    for (const Setup& st : setups) {
      ThreadPool pool(threads);
      MatmulScratch scratch;
      std::vector<OwnedMatrix> ms;
      const int64_t rows_of[] = {37, 8, 130};
      for (size_t i = 0; i < st.types.size(); ++i) ms.push_back(random_matrix(table, st.types[i], rows_of[i], cols, rng));
      std::vector<float> x((size_t)(cols * st.n_cols));
      std::normal_distribution<float> nd(0, 1);
      for (auto& v : x) v = nd(rng);
      std::vector<std::vector<float>> got(ms.size()), want(ms.size());
      std::vector<MatmulOutput> outs;
      for (size_t i = 0; i < ms.size(); ++i) {
        const size_t stride = (size_t)ms[i].w.rows + 2;
        got[i].assign(stride * (size_t)st.n_cols, NAN);
        want[i].assign(stride * (size_t)st.n_cols, NAN);
        matmul(ms[i].w, x.data(), (size_t)cols, st.n_cols, want[i].data(), stride, pool, scratch);
        outs.push_back({&ms[i].w, got[i].data(), stride});
      }
      // A tail, run on every thread once the products are complete: each
      // thread checks that every output is already there.
      std::atomic<int> tails{0}, incomplete{0};
      const RegionTail tail = [&](int, int nt) {
        tails++;
        if (nt != threads) incomplete++;
        for (size_t i = 0; i < ms.size(); ++i)
          for (int64_t c = 0; c < st.n_cols; ++c)
            for (int64_t r = 0; r < ms[i].w.rows; ++r)
              if (std::isnan(got[i][(size_t)c * outs[i].y_stride + (size_t)r])) incomplete++;
      };
      matmul_shared_input(outs.data(), (int)outs.size(), x.data(), (size_t)cols, st.n_cols, pool, scratch, &tail);
      EXPECT_EQ(tails.load(), threads);
      EXPECT_EQ(incomplete.load(), 0) << "threads " << threads << ", " << st.n_cols << " columns";
      for (size_t i = 0; i < ms.size(); ++i)
        for (size_t k = 0; k < got[i].size(); ++k) {
          // Bitwise equal, NaN padding included (memcmp-like comparison).
          ASSERT_TRUE(got[i][k] == want[i][k] || (std::isnan(got[i][k]) && std::isnan(want[i][k])))
              << "threads " << threads << " output " << i << " index " << k << ": " << got[i][k] << " vs "
              << want[i][k];
        }
    }
}

// Q4_K and Q6_K matrices repacked 16 rows at a time (as the loader does on
// CPUs with the kernels): GEMV and GEMM through matmul, and
// matmul_shared_input mixing a repacked matrix with a file-layout Q6_K,
// against the file-layout matrices. The sums are the same integers, scaled
// in another order: 1e-5 relative.
TEST(Matmul, RepackedMatricesMatchTheFileLayout) {
  const CpuFeatures cpu = detect_cpu();
  quant::QuantTable table(cpu);
  std::vector<const quant::Rows16Kernels*> sets;  // every set this CPU runs, of both types
  for (TensorType type : {TensorType::Q4_K, TensorType::Q6_K})
    for (const quant::Rows16Kernels* k : quant::rows16_kernel_variants(type, cpu)) sets.push_back(k);
  if (sets.empty()) GTEST_SKIP() << "no rows16 kernel on this CPU";
  for (const quant::Rows16Kernels* k : sets) {
    const TensorType type = k->type;
    std::mt19937 rng(8);
    const int64_t cols = 768;
    OwnedMatrix plain = random_matrix(table, type, 96, cols, rng);
    OwnedMatrix q6 = random_matrix(table, TensorType::Q6_K, 40, cols, rng);
    std::vector<uint8_t> packed = plain.bytes;
    quant::repack_rows16_in_place(type, packed.data(), plain.w.rows, cols);
    WeightMatrix repacked = plain.w;
    repacked.data = packed.data();
    repacked.rows16 = k;
    // A row read back from the repacked matrix is the file's row.
    std::vector<float> row_plain((size_t)cols), row_packed((size_t)cols);
    for (int64_t r : {0, 17, 95}) {
      dequantize_row(plain.w, r, row_plain.data());
      dequantize_row(repacked, r, row_packed.data());
      ASSERT_EQ(row_plain, row_packed) << type_name(type) << " row " << r;
    }
    std::normal_distribution<float> nd(0, 1);
    for (int threads : {1, 2, 3})
      for (int64_t n_cols : {1, 5, 7}) {
        ThreadPool pool(threads);
        MatmulScratch scratch;
        std::vector<float> x((size_t)(cols * n_cols));
        for (auto& v : x) v = nd(rng);
        const size_t stride = 100;
        std::vector<float> want(stride * (size_t)n_cols, NAN), got = want;
        matmul(plain.w, x.data(), (size_t)cols, n_cols, want.data(), stride, pool, scratch);
        matmul(repacked, x.data(), (size_t)cols, n_cols, got.data(), stride, pool, scratch);
        float scale = 0;
        for (float v : want) if (!std::isnan(v)) scale = std::max(scale, std::fabs(v));
        for (size_t i = 0; i < got.size(); ++i) {
          if (i % stride >= 96) {
            EXPECT_TRUE(std::isnan(got[i])) << "wrote past the rows at " << i;
            continue;
          }
          ASSERT_NEAR(got[i], want[i], 1e-5f * scale)
              << k->name << " " << type_name(type) << " threads " << threads << " n_cols " << n_cols << " i " << i;
        }
        if (n_cols != 1) continue;
        std::vector<float> g4((size_t)96, NAN), g6((size_t)40, NAN), w6((size_t)40, NAN);
        matmul(q6.w, x.data(), (size_t)cols, 1, w6.data(), 40, pool, scratch);
        const MatmulOutput outs[2] = {{&repacked, g4.data(), 96}, {&q6.w, g6.data(), 40}};
        matmul_shared_input(outs, 2, x.data(), (size_t)cols, 1, pool, scratch);
        for (int i = 0; i < 96; ++i) ASSERT_NEAR(g4[(size_t)i], want[(size_t)i], 1e-5f * scale) << i;
        for (int i = 0; i < 40; ++i) ASSERT_EQ(g6[(size_t)i], w6[(size_t)i]) << i;
      }
  }
}

}  // namespace
}  // namespace oscar::kernels
