// The arithmetic of a prompt tile (prompt_tile.h): its query heads sit in the
// lanes of float vectors, one lane per (token, head), so both products of
// attention are small matrix products whose inner loop is a broadcast of
// one row value times a vector of heads:
//   scores  S[j][lane]    = sum_i K[j][i] * Qt[i][lane]
//   values  Acc[i][lane] += sum_j V[j][i] * P[j][lane]
// No lane sums, and each row value is read once per tile instead of once
// per kernel call of 4 or 8 heads; the online softmax runs on whole vectors
// of heads too. The AVX-512 set is what prompt tiles use; the scalar set is
// its reference (tests/attention/test_tile_kernels.cpp) and is never
// dispatched to (without AVX-512 the row kernels serve prompts).
#pragma once

#include <cstddef>
#include <cstdint>

namespace oscar::attention::detail {

// Lanes of a tile come in vectors of this many; a tile has 1 or 2.
constexpr int kTileVectorLanes = 16;
constexpr int kTileMaxVectors = 2;

struct TileKernels {
  // c[r * ldc + l] = (accumulate ? c[r * ldc + l] : 0) + sum_{k < kk} A(r, k) * b[k * ldb + l]
  // for r < m and l < 16 * nv, where A(r, k) = a[r * sa + k * sk]. Meanwhile
  // asks for the ahead_bytes at `ahead` to be brought into L2 (the rows a
  // later call will read), a few lines between passes.
  void (*gemm)(const float* a, size_t sa, size_t sk, int m, int kk, const float* b, size_t ldb, int nv, float* c,
               size_t ldc, bool accumulate, const uint8_t* ahead, size_t ahead_bytes) = nullptr;
  // The online-softmax step for a block of n score rows s[j * 16 nv + l]
  // (lanes l < 16 nv): per lane, m_new = max(m, the block's scores);
  // s becomes p = exp(s - m_new) (0 where s is -inf); l = l * corr + sum p,
  // with corr = exp(m - m_new) (0 while m is -inf); every acc[i * 16 nv + l]
  // (i < d) is multiplied by corr; m = m_new.
  void (*softmax)(float* s, int n, int nv, float* m, float* l, float* acc, int d) = nullptr;
};

// The AVX-512 set (tile_kernels_avx512.cpp; x86-64 only, for CPUs with F,
// BW, VL and DQ: AttentionKernels picks it), and the scalar reference.
const TileKernels& avx512_tile_kernels();
const TileKernels& reference_tile_kernels();

}  // namespace oscar::attention::detail
