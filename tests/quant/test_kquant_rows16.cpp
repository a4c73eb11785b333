// The rows16 Q4_K layout (kquant_rows16.h): repacking is lossless (unpack
// gives the file's bytes back), and its GEMVs, the scalar one and the SIMD
// one this CPU has, match the file-layout scalar reference dot_q4_K_ref on
// quantized rows and on raw random bit patterns.
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
  int64_t rows, cols;
  size_t row_bytes;
  std::vector<uint8_t> bytes;
};

// Quantized normal rows, or (raw) random bytes with sane f16 scales.
Matrix make_matrix(int64_t rows, int64_t cols, bool raw, unsigned seed) {
  Matrix m{rows, cols, (size_t)(cols / kQK_K) * sizeof(BlockQ4_K), {}};
  m.bytes.resize(m.row_bytes * (size_t)rows);
  std::mt19937 rng(seed);
  std::normal_distribution<float> nd(0.0f, 1.0f);
  std::vector<float> x((size_t)cols);
  for (int64_t r = 0; r < rows; ++r) {
    uint8_t* row = &m.bytes[(size_t)r * m.row_bytes];
    if (!raw) {
      for (auto& v : x) v = nd(rng) * (1.0f + (float)(r % 5));
      quantize_q4_K(x.data(), row, cols);
      continue;
    }
    for (size_t i = 0; i < m.row_bytes; ++i) row[i] = (uint8_t)rng();
    for (int64_t ib = 0; ib < cols / kQK_K; ++ib) {
      auto& b = reinterpret_cast<BlockQ4_K*>(row)[ib];
      b.d = f32_to_fp16(std::uniform_real_distribution<float>(1e-4f, 1e-2f)(rng));
      b.dmin = f32_to_fp16(std::uniform_real_distribution<float>(1e-4f, 1e-2f)(rng));
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

TEST(Rows16, RepackRoundTripsExactly) {
  for (bool raw : {false, true}) {
    const Matrix m = make_matrix(48, 512, raw, 3);
    std::vector<uint8_t> packed(q4_K_rows16_bytes(m.rows, m.cols));
    repack_q4_K_rows16(m.bytes.data(), m.row_bytes, m.rows, m.cols, packed.data());
    std::vector<uint8_t> back(m.bytes.size(), 0xAB);
    unpack_q4_K_rows16(packed.data(), m.rows, m.cols, back.data(), m.row_bytes);
    EXPECT_EQ(back, m.bytes) << (raw ? "raw" : "quantized");
  }
}

TEST(Rows16, InPlaceRepackMatchesTheCopyingOne) {
  const Matrix m = make_matrix(64, 768, true, 9);
  std::vector<uint8_t> copied(q4_K_rows16_bytes(m.rows, m.cols));
  ASSERT_EQ(copied.size(), m.bytes.size());  // same bytes: a loaded matrix is repacked where it lies
  repack_q4_K_rows16(m.bytes.data(), m.row_bytes, m.rows, m.cols, copied.data());
  std::vector<uint8_t> in_place = m.bytes;
  repack_q4_K_rows16_in_place(in_place.data(), m.rows, m.cols);
  EXPECT_EQ(in_place, copied);
}

TEST(Rows16, ShapesThatDoNotFitAreRefused) {
  EXPECT_FALSE(q4_K_rows16_fits(24, 256));
  EXPECT_FALSE(q4_K_rows16_fits(32, 300));
  EXPECT_TRUE(q4_K_rows16_fits(32, 512));
  std::vector<uint8_t> src(24 * sizeof(BlockQ4_K)), dst(4096);
  EXPECT_THROW(repack_q4_K_rows16(src.data(), sizeof(BlockQ4_K), 24, 256, dst.data()), Error);
}

TEST(Rows16, GemvsMatchTheFileLayoutReference) {
  struct Impl {
    const char* name;
    Rows16GemvFn fn;
  };
  std::vector<Impl> impls = {{"ref", gemv_q4_K_rows16_ref}};
  if (const Rows16Kernels* k = q4_K_rows16_kernels(detect_cpu())) impls.push_back({"simd", k->gemv});
  for (bool raw : {false, true})
    for (bool extreme : {false, true})
      for (int64_t cols : {256, 1024, 2560}) {
        const int64_t rows = 64;
        const Matrix m = make_matrix(rows, cols, raw, (unsigned)(cols + raw));
        const std::vector<BlockQ8_K> a = make_act(cols, (unsigned)cols, extreme);
        std::vector<float> want((size_t)rows);
        for (int64_t r = 0; r < rows; ++r)
          dot_q4_K_ref(cols, &m.bytes[(size_t)r * m.row_bytes], m.row_bytes, 1, a.data(), 0, 1, &want[(size_t)r], 1);
        std::vector<uint8_t> packed(q4_K_rows16_bytes(rows, cols));
        repack_q4_K_rows16(m.bytes.data(), m.row_bytes, rows, cols, packed.data());
        for (const Impl& impl : impls) {
          // Groups 1..3 only: the offset g0 and the output placement are checked too.
          std::vector<float> got((size_t)rows, NAN);
          impl.fn(cols, packed.data(), 1, 3, a.data(), got.data());
          double scale = 0;
          for (float v : want) scale = std::max(scale, (double)std::fabs(v));
          for (int64_t i = 0; i < 48; ++i)
            ASSERT_NEAR(got[(size_t)i], want[(size_t)(16 + i)], 2e-5 * scale + 1e-6)
                << impl.name << " raw " << raw << " extreme " << extreme << " cols " << cols << " row " << 16 + i;
          EXPECT_TRUE(std::isnan(got[48])) << impl.name << " wrote past its groups";
        }
      }
}

}  // namespace
}  // namespace oscar::quant
