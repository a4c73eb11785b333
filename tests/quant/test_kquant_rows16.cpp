// The rows16 Q4_K and Q6_K layouts (kquant_rows16.h): repacking is lossless
// (unpack, whole or one row, gives the file's bytes back), and the GEMVs and
// GEMM tiles, the scalar ones and the SIMD ones this CPU has, match the
// file-layout scalar references dot_q4_K_ref / dot_q6_K_ref on quantized rows
// and on raw random bit patterns.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <random>
#include <vector>

#include "core/error.h"
#include "core/fp16.h"
#include "quant/kquant_blocks.h"
#include "quant/kquant_rows16.h"

namespace oscar::quant {
namespace {

struct Matrix {
  TensorType type;
  int64_t rows, cols;
  size_t row_bytes;
  std::vector<uint8_t> bytes;
};

constexpr TensorType kTypes[] = {TensorType::Q4_K, TensorType::Q6_K};

// Quantized normal rows, or (raw) random bytes with sane f16 scales.
Matrix make_matrix(TensorType t, int64_t rows, int64_t cols, bool raw, unsigned seed) {
  const bool q4 = t == TensorType::Q4_K;
  Matrix m{t, rows, cols, (size_t)(cols / kQK_K) * (q4 ? sizeof(BlockQ4_K) : sizeof(BlockQ6_K)), {}};
  m.bytes.resize(m.row_bytes * (size_t)rows);
  std::mt19937 rng(seed);
  std::normal_distribution<float> nd(0.0f, 1.0f);
  std::vector<float> x((size_t)cols);
  for (int64_t r = 0; r < rows; ++r) {
    uint8_t* row = &m.bytes[(size_t)r * m.row_bytes];
    if (!raw) {
      for (auto& v : x) v = nd(rng) * (1.0f + (float)(r % 5));
      if (q4) quantize_q4_K(x.data(), row, cols);
      else quantize_q6_K(x.data(), row, cols);
      continue;
    }
    for (size_t i = 0; i < m.row_bytes; ++i) row[i] = (uint8_t)rng();
    std::uniform_real_distribution<float> scale(1e-4f, 1e-2f);
    for (int64_t ib = 0; ib < cols / kQK_K; ++ib) {
      if (q4) {
        auto& b = reinterpret_cast<BlockQ4_K*>(row)[ib];
        b.d = f32_to_fp16(scale(rng));
        b.dmin = f32_to_fp16(scale(rng));
      } else {
        reinterpret_cast<BlockQ6_K*>(row)[ib].d = f32_to_fp16(scale(rng));
      }
    }
  }
  return m;
}

std::vector<BlockQ8_K> make_act(int64_t cols, unsigned seed, bool extreme) {
  std::mt19937 rng(seed);
  std::normal_distribution<float> nd(0.0f, 1.0f);
  std::vector<float> x((size_t)cols);
  for (size_t i = 0; i < x.size(); ++i) x[i] = extreme ? (i % 2 ? 1e3f : -1e3f) : nd(rng);
  std::vector<BlockQ8_K> a((size_t)(cols / kQK_K));
  quantize_q8_K(x.data(), a.data(), cols);
  return a;
}

// The file-layout scalar reference of m's type: row r against act.
float reference_dot(const Matrix& m, int64_t r, const BlockQ8_K* act) {
  float out = NAN;
  const auto* row = &m.bytes[(size_t)r * m.row_bytes];
  if (m.type == TensorType::Q4_K) dot_q4_K_ref(m.cols, row, m.row_bytes, 1, act, 0, 1, &out, 1);
  else dot_q6_K_ref(m.cols, row, m.row_bytes, 1, act, 0, 1, &out, 1);
  return out;
}

Rows16GemvFn reference_gemv(TensorType t) {
  return t == TensorType::Q4_K ? gemv_q4_K_rows16_ref : gemv_q6_K_rows16_ref;
}

TEST(Rows16, RepackRoundTripsExactly) {
  for (TensorType t : kTypes)
    for (bool raw : {false, true}) {
      const Matrix m = make_matrix(t, 48, 512, raw, 3);
      std::vector<uint8_t> packed(m.bytes.size());
      repack_rows16(t, m.bytes.data(), m.row_bytes, m.rows, m.cols, packed.data());
      EXPECT_NE(packed, m.bytes) << type_name(t);
      std::vector<uint8_t> back(m.bytes.size(), 0xAB);
      unpack_rows16(t, packed.data(), m.rows, m.cols, back.data(), m.row_bytes);
      EXPECT_EQ(back, m.bytes) << type_name(t) << (raw ? " raw" : " quantized");
      // One row at a time, as an embedding lookup reads a tied output table.
      for (int64_t r : {0, 1, 15, 16, 33, 47}) {
        std::vector<uint8_t> row(m.row_bytes, 0xCD);
        unpack_row_rows16(t, packed.data(), m.cols, r, row.data());
        EXPECT_TRUE(std::equal(row.begin(), row.end(), m.bytes.begin() + (long)(r * (int64_t)m.row_bytes)))
            << type_name(t) << " row " << r;
      }
    }
}

TEST(Rows16, InPlaceRepackMatchesTheCopyingOne) {
  for (TensorType t : kTypes) {
    const Matrix m = make_matrix(t, 64, 768, true, 9);
    std::vector<uint8_t> copied(m.bytes.size());
    repack_rows16(t, m.bytes.data(), m.row_bytes, m.rows, m.cols, copied.data());
    std::vector<uint8_t> in_place = m.bytes;
    repack_rows16_in_place(t, in_place.data(), m.rows, m.cols);
    EXPECT_EQ(in_place, copied) << type_name(t);
  }
}

TEST(Rows16, ShapesAndTypesThatDoNotFitAreRefused) {
  for (TensorType t : kTypes) {
    EXPECT_FALSE(rows16_fits(t, 24, 256));
    EXPECT_FALSE(rows16_fits(t, 32, 300));
    EXPECT_TRUE(rows16_fits(t, 32, 512));
  }
  EXPECT_FALSE(rows16_fits(TensorType::Q5_K, 32, 512));
  EXPECT_FALSE(rows16_fits(TensorType::Q8_0, 32, 512));
  std::vector<uint8_t> src(32 * sizeof(BlockQ6_K)), dst(src.size());
  EXPECT_THROW(repack_rows16(TensorType::Q4_K, src.data(), sizeof(BlockQ4_K), 24, 256, dst.data()), Error);
  EXPECT_THROW(repack_rows16(TensorType::Q5_K, src.data(), sizeof(BlockQ5_K), 32, 256, dst.data()), Error);
  EXPECT_EQ(rows16_kernels(TensorType::Q5_K, detect_cpu()), nullptr);
}

// The loader repacks a type only where its rows16 GEMV beats the file
// layout's: AVX-512 VNNI both types, AVX2 alone Q4_K only, scalar nothing.
TEST(Rows16, DispatchRepacksOnlyWhereDecodeGains) {
  EXPECT_EQ(rows16_kernels(TensorType::Q4_K, CpuFeatures{}), nullptr);
  EXPECT_EQ(rows16_kernels(TensorType::Q6_K, CpuFeatures{}), nullptr);
  const CpuFeatures cpu = detect_cpu();
  if (!cpu.has_avx2_family()) GTEST_SKIP() << "no AVX2";
  CpuFeatures avx2 = cpu;
  avx2.avx512f = avx2.avx512bw = avx2.avx512vl = avx2.avx512dq = avx2.avx512vnni = false;
  ASSERT_NE(rows16_kernels(TensorType::Q4_K, avx2), nullptr);
  EXPECT_STREQ(rows16_kernels(TensorType::Q4_K, avx2)->name, "rows16-avx2");
  EXPECT_EQ(rows16_kernels(TensorType::Q6_K, avx2), nullptr);
  EXPECT_EQ(rows16_kernel_variants(TensorType::Q6_K, avx2).size(), 1u);  // still tested
  if (!(cpu.avx512vnni && cpu.has_avx512_family())) return;
  for (TensorType t : kTypes) {
    ASSERT_NE(rows16_kernels(t, cpu), nullptr);
    EXPECT_STREQ(rows16_kernels(t, cpu)->name, "rows16-avx512vnni");
    EXPECT_EQ(rows16_kernels(t, cpu)->type, t);
  }
}

TEST(Rows16, GemvsMatchTheFileLayoutReference) {
  struct Impl {
    const char* name;
    Rows16GemvFn fn;
  };
  for (TensorType t : kTypes) {
    std::vector<Impl> impls = {{"ref", reference_gemv(t)}};
    for (const Rows16Kernels* k : rows16_kernel_variants(t, detect_cpu())) impls.push_back({k->name, k->gemv});
    for (bool raw : {false, true})
      for (bool extreme : {false, true})
        for (int64_t cols : {256, 1024, 2560}) {
          const int64_t rows = 64;
          const Matrix m = make_matrix(t, rows, cols, raw, (unsigned)(cols + raw));
          const std::vector<BlockQ8_K> a = make_act(cols, (unsigned)cols, extreme);
          std::vector<float> want((size_t)rows);
          for (int64_t r = 0; r < rows; ++r) want[(size_t)r] = reference_dot(m, r, a.data());
          std::vector<uint8_t> packed(m.bytes.size());
          repack_rows16(t, m.bytes.data(), m.row_bytes, rows, cols, packed.data());
          double scale = 0;
          for (float v : want) scale = std::max(scale, (double)std::fabs(v));
          for (const Impl& impl : impls) {
            // Groups 1..3 only: the offset g0 and the output placement are checked too.
            std::vector<float> got((size_t)rows, NAN);
            impl.fn(cols, packed.data(), 1, 3, a.data(), got.data());
            for (int64_t i = 0; i < 48; ++i)
              ASSERT_NEAR(got[(size_t)i], want[(size_t)(16 + i)], 2e-5 * scale + 1e-6)
                  << type_name(t) << " " << impl.name << " raw " << raw << " extreme " << extreme << " cols " << cols
                  << " row " << 16 + i;
            EXPECT_TRUE(std::isnan(got[48])) << impl.name << " wrote past its groups";
          }
        }
  }
}

// The GEMM tile of every column count (4-, 2- and 1-column tiles and their
// mixes) against the file-layout reference, column by column.
TEST(Rows16, GemmTilesMatchTheFileLayoutReference) {
  std::vector<const Rows16Kernels*> sets;  // every set this CPU runs, of both types
  for (TensorType t : kTypes)
    for (const Rows16Kernels* k : rows16_kernel_variants(t, detect_cpu())) sets.push_back(k);
  if (sets.empty()) GTEST_SKIP() << "no rows16 kernels on this CPU";
  for (const Rows16Kernels* k : sets) {
    const TensorType t = k->type;
    const int64_t rows = 32, cols = 512;
    const Matrix m = make_matrix(t, rows, cols, true, 21);
    std::vector<uint8_t> packed(m.bytes.size());
    repack_rows16(t, m.bytes.data(), m.row_bytes, rows, cols, packed.data());
    for (int64_t nc : {1, 2, 3, 4, 7}) {
      std::vector<std::vector<BlockQ8_K>> acts;
      for (int64_t c = 0; c < nc; ++c) acts.push_back(make_act(cols, (unsigned)(100 + c), c == 2));
      const size_t act_stride = acts[0].size() * sizeof(BlockQ8_K);
      std::vector<uint8_t> act(act_stride * (size_t)nc);
      for (int64_t c = 0; c < nc; ++c) std::memcpy(&act[(size_t)c * act_stride], acts[(size_t)c].data(), act_stride);
      const size_t out_stride = 40;
      std::vector<float> got(out_stride * (size_t)nc, NAN);
      k->gemm(cols, packed.data(), 1, act.data(), act_stride, nc, got.data(), out_stride);
      for (int64_t c = 0; c < nc; ++c) {
        float want[kRows16], scale = 0;
        for (int r = 0; r < kRows16; ++r) {
          want[r] = reference_dot(m, 16 + r, acts[(size_t)c].data());
          scale = std::max(scale, std::fabs(want[r]));
        }
        for (int r = 0; r < kRows16; ++r)
          ASSERT_NEAR(got[(size_t)c * out_stride + (size_t)r], want[r], 2e-5 * scale + 1e-6)
              << k->name << " " << type_name(t) << " nc " << nc << " column " << c << " row " << 16 + r;
        EXPECT_TRUE(std::isnan(got[(size_t)c * out_stride + kRows16])) << "wrote past the group";
      }
    }
  }
}

}  // namespace
}  // namespace oscar::quant
