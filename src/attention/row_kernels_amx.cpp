// q2_0 scores and value sums on AMX-INT8 tiles. The integer sums are those
// of the AVX512-VNNI kernels (row_kernels_avx512vnni.cpp,
// row_kernels_avx512vbmi.cpp): the same digits, the same codes, the same
// float epilogue, so the results are bit for bit theirs. What changes is
// who multiplies: one tdpbsud takes a 12 x 64 tile of signed digits and a
// 64 x 16 tile of codes (16384 byte products) in about 13 TSC, where
// vpdpbusd does 64 in half a cycle; with three digits per value the VNNI
// kernels were bound by those products (session 22). Here the work left is
// laying the codes out as tiles, which the VNNI kernels did as well.
//
//   Scores: C[(h, t)][row] += A[(h, t)][value] . B[value][row]: A is the
//   prepared query's digits (Q2IntView::tile_digits), B the codes of 16
//   rows transposed a word at a time (transpose_words), each 2-bit field a
//   tile row. C's rows are the VNNI kernel's accumulators.
//
//   Value sums: C[(h, t)][value] += A[(h, t)][row] . B[row][value]: A is
//   the rows' weight digits (weight_digits), B the codes of 64 rows
//   transposed four rows at a time (quad_codes), a field per tile.
//
// Tiles: tmm0-1 accumulate (C: one per 4 heads, or with 4 heads or fewer,
// the scores' groups in turns), tmm2-5 hold digits (A),
// tmm6-7 codes (B). Every call sets the configuration unless the thread has
// it already (ldtilecfg costs ~130 TSC, reading it back ~18).
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#pragma GCC diagnostic ignored "-Wuninitialized"
#endif
#include <immintrin.h>

#include <algorithm>
#include <cstring>

#include "attention/row_kernels_impl.h"
#include "attention/row_kernels_vbmi.h"
#include "attention/row_kernels_vnni.h"

namespace oscar::attention::detail {
namespace {

constexpr int kT = kQ2IntDigits;
static_assert(kQ2IntWeightDigits == kQ2IntDigits, "one tile shape for both kernels' digits");
constexpr int kRows = kQ2IntTileRows;  // rows of A and C: 4 heads x 3 digits
constexpr int kTileBytes = 1024;       // a B tile: 16 rows of 64 bytes

struct alignas(64) TileConfig {
  uint8_t palette = 1, start_row = 0;
  uint8_t reserved[14] = {};
  uint16_t colsb[16] = {};
  uint8_t rows[16] = {};
};
constexpr TileConfig make_config() {
  TileConfig c;
  for (int t = 0; t < 8; ++t) {
    c.colsb[t] = 64;
    c.rows[t] = t < 6 ? kRows : 16;
  }
  return c;
}
alignas(64) constexpr TileConfig kConfig = make_config();

// Loads kConfig unless this thread's tiles have it already (a thread that
// never used them reads back zeros).
inline void configure_tiles() {
  TileConfig have;
  asm volatile("sttilecfg %0" : "=m"(have));
  if (std::memcmp(&have, &kConfig, sizeof have) != 0) asm volatile("ldtilecfg %0" ::"m"(kConfig));
}
// GCC's tile intrinsics are asm statements that do not tell the compiler
// they read or write memory, so it could move the stores that fill a tile's
// buffer past the load. These say so.
template <int T>
inline void tile_load(const void* p) {
  asm volatile("tileloadd (%0,%1,1), %%tmm%c2" ::"r"(p), "r"((long)64), "i"(T) : "memory");
}
template <int T>
inline void tile_store(void* p) {
  asm volatile("tilestored %%tmm%c2, (%0,%1,1)" ::"r"(p), "r"((long)64), "i"(T) : "memory");
}
template <int T>
inline void tile_zero() {
  asm volatile("tilezero %%tmm%c0" ::"i"(T));
}
// tmm C += tmm A (signed bytes) . tmm B (unsigned bytes)
template <int C, int A, int B>
inline void tile_dot() {
  asm volatile("tdpbsud %%tmm%c2, %%tmm%c1, %%tmm%c0" ::"i"(C), "i"(A), "i"(B));
}
// The digit tiles are chosen at run time (which 64 values, which heads).
inline void load_digits(int a, const void* p) {
  switch (a) {
    case 2: return tile_load<2>(p);
    case 3: return tile_load<3>(p);
    case 4: return tile_load<4>(p);
    default: return tile_load<5>(p);
  }
}
template <int C, int B>
inline void dot_digits(int a) {
  switch (a) {
    case 2: return tile_dot<C, 2, B>();
    case 3: return tile_dot<C, 3, B>();
    case 4: return tile_dot<C, 4, B>();
    default: return tile_dot<C, 5, B>();
  }
}

// Field k (2 bits) of every byte of x, as a byte 0..3: one GF(2) affine map
// (bits 2k and 2k + 1 to bits 0 and 1) instead of a shift and a mask.
template <int K>
inline __m512i code_field(__m512i x) {
  if constexpr (K == 0) return _mm512_and_si512(x, _mm512_set1_epi8(3));
  constexpr long long kMatrix = (long long)((1ull << (2 * K)) << 56 | (1ull << (2 * K + 1)) << 48);
  return _mm512_gf2p8affine_epi64_epi8(x, _mm512_set1_epi64(kMatrix), 0);
}

// The kT digit sums of one head that a C tile row each holds (16 int32 at
// `at`, the next digit 16 further on), in base 256, as floats: the VNNI
// kernels' combination, in the same order, so the results match theirs.
inline __m512 digit_sum(const int32_t* at) {
  __m512 x = _mm512_cvtepi32_ps(_mm512_load_si512(at));
  for (int t = 1; t < kT; ++t)
    x = _mm512_fmadd_ps(x, _mm512_set1_ps(256.0f), _mm512_cvtepi32_ps(_mm512_load_si512(at + t * 16)));
  return x;
}

// Words 0-7 of 16 rows at `at`, as two B tiles of the scores: row m*4 + k
// of the 2 KiB holds field k of word m, lane L (4 bytes) from row kLaneRow[L].
inline void score_codes(const uint8_t* const* r, size_t at, uint8_t* out) {
  __m512i in[8], w[8];
  for (int i = 0; i < 8; ++i) in[i] = load_pair(r[i] + at, r[i + 8] + at);
  transpose_words(in, w);
  for (int m = 0; m < 8; ++m) {
    _mm512_store_si512(out + (m * 4 + 0) * 64, code_field<0>(w[m]));
    _mm512_store_si512(out + (m * 4 + 1) * 64, code_field<1>(w[m]));
    _mm512_store_si512(out + (m * 4 + 2) * 64, code_field<2>(w[m]));
    _mm512_store_si512(out + (m * 4 + 3) * 64, code_field<3>(w[m]));
  }
}

// Where the kernels keep what they lay out and what the tiles sum matters
// more in the model than on their own: in decode, score and value calls
// alternate with the softmax over rows streamed from memory, and each
// kernel's buffers must stay in L1 beside the rest. With 8 KiB batches of
// codes and two in flight, both kernels ran at about 2.3x their
// rows-in-L2 time per row in decode; one 16-row set a stage (scores) and
// one chunk at a time (value sums) brought that to 1.5x and 1.9x (session
// 23).
//
// The scores run in three stages per set: lay out its codes (vector
// stores), give them to the tiles (sums to memory), the float epilogue.
// Stage s of set i runs next to stage s + 1 of set i - 1 and stage s + 2 of
// set i - 2: a tile load then reads stores a set old (stores reach the cache
// only once they retire, and a tile load right after the stores that fill
// its buffer waits for them and for the tile products before them), and the
// tile products overlap the vector work.
template <class LayOut, class Tiles, class Finish>
inline void pipeline(int n, LayOut lay_out, Tiles tiles, Finish finish) {
  for (int i = 0; i < n + 2; ++i) {
    if (i < n) lay_out(i);
    if (i >= 1 && i <= n) tiles(i - 1);
    if (i >= 2) finish(i - 2);
  }
}

constexpr int kScoreUnitBytes = 2 * kTileBytes;          // 32 code bytes of 16 rows: two B tiles
constexpr int kMaxSetUnits = kAmxMaxScoreDim / 128;      // units of one set at the largest head dim

// H query heads, in V = ceil(H / 4) prepared queries. A unit is 32 code
// bytes of one group of a set of 16 rows.
template <int H>
void score_q2_amx(const RowBlock& b, const Q2IntView* q, float* scores, size_t ss) {
  constexpr int V = (H + kQ2IntQueryHeads - 1) / kQ2IntQueryHeads;
  configure_tiles();
  const int d = b.d, g = b.g, qn = g / 4, ng = d / g, steps = d / 64, chunks = qn / 32;
  const size_t gb = 4 + (size_t)qn;
  // The digit tiles stay loaded when they fit (d <= 128 at 8 heads, <= 256
  // at 4); otherwise each is loaded where it is used.
  const bool keep = steps * V <= 4;
  if (keep)
    for (int v = 0; v < V; ++v)
      for (int s = 0; s < steps; ++s) load_digits(2 + v * steps + s, q[v].tile_digits + s * kQ2IntTileBytes);
  // By set (two in flight): codes by unit, sums by group with V tiles each.
  alignas(64) uint8_t codes[2][kMaxSetUnits][kScoreUnitBytes];
  alignas(64) int32_t sums[2][kMaxSetUnits][V][kRows * 16];
  const __m512i lane_row = _mm512_loadu_si512(kLaneRow);
  auto lay_out = [&](int i) {
    const int j0 = 16 * i;
    prefetch_ahead(b, j0, 16);
    const uint8_t* r[16];  // rows past the block repeat its last one
    for (int k = 0; k < 16; ++k) r[k] = b.rows + (size_t)std::min(j0 + k, b.n - 1) * b.stride;
    for (int gi = 0; gi < ng; ++gi)
      for (int c = 0; c < chunks; ++c) score_codes(r, gi * gb + 4 + 32 * c, codes[i & 1][gi * chunks + c]);
  };
  auto tiles = [&](int i) {
    for (int gi = 0; gi < ng; ++gi) {
      // With one view, groups alternate between tmm0 and tmm1, so one need
      // not wait for the last one's sums to leave.
      const bool odd = V == 1 && (gi & 1);
      if (odd) tile_zero<1>();
      else {
        tile_zero<0>();
        if (V > 1) tile_zero<1>();
      }
      for (int c = 0; c < chunks; ++c) {
        const uint8_t* unit = codes[i & 1][gi * chunks + c];
        tile_load<6>(unit);
        tile_load<7>(unit + kTileBytes);
        const int s0 = (gi * qn + 32 * c) / 16;  // the first of the unit's two 64-value steps
        for (int v = 0; v < V; ++v)
          for (int s = 0; s < 2; ++s) {
            int a = 2 + v * steps + s0 + s;
            if (!keep) {
              a = 2 + 2 * v + s;
              load_digits(a, q[v].tile_digits + (s0 + s) * kQ2IntTileBytes);
            }
            if (v == 0 && !odd) s == 0 ? dot_digits<0, 6>(a) : dot_digits<0, 7>(a);
            else s == 0 ? dot_digits<1, 6>(a) : dot_digits<1, 7>(a);
          }
      }
      if (odd) tile_store<1>(sums[i & 1][gi][0]);
      else {
        tile_store<0>(sums[i & 1][gi][0]);
        if (V > 1) tile_store<1>(sums[i & 1][gi][V - 1]);
      }
    }
  };
  auto finish = [&](int i) {
    const int j0 = 16 * i, left = b.n - j0;
    const __m512i hdr_at = _mm512_mullo_epi32(_mm512_min_epi32(lane_row, _mm512_set1_epi32(left - 1)),
                                              _mm512_set1_epi32((int)b.stride));
    __m512 sum[H];
    for (int h = 0; h < H; ++h) sum[h] = _mm512_setzero_ps();
    for (int gi = 0; gi < ng; ++gi) {
      // Lane L: the f16 scale of its row's group in the low half, the offset in the high half.
      __m512 s, lo;
      unpack_headers(_mm512_i32gather_epi32(hdr_at, b.rows + (size_t)j0 * b.stride + gi * gb, 1), s, lo);
      for (int h = 0; h < H; ++h) {
        const int v = h / kQ2IntQueryHeads, row = (h % kQ2IntQueryHeads) * kT;
        sum[h] = _mm512_fmadd_ps(digit_sum(sums[i & 1][gi][v] + row * 16), s, sum[h]);
        sum[h] = _mm512_fmadd_ps(lo, _mm512_set1_ps(q[v].lo_weight[(size_t)(h % kQ2IntQueryHeads) * ng + gi]), sum[h]);
      }
    }
    const __mmask16 m16 = left >= 16 ? (__mmask16)0xFFFF : (__mmask16)((1u << left) - 1);
    for (int h = 0; h < H; ++h) {
      const float out = q[h / kQ2IntQueryHeads].out_scale[h % kQ2IntQueryHeads];
      _mm512_mask_storeu_ps(scores + (size_t)h * ss + j0, m16,
                            _mm512_permutexvar_ps(lane_row, _mm512_mul_ps(sum[h], _mm512_set1_ps(out))));
    }
  };
  pipeline((b.n + 15) / 16, lay_out, tiles, finish);
}

void score_q2(const RowBlock& b, const Q2IntView* q, int n_heads, float* scores, size_t stride) {
  with_heads(n_heads, [&](auto h) { score_q2_amx<decltype(h)::value>(b, q, scores, stride); });
}

// H heads, in V = ceil(H / 4) tiles of digits. One chunk of 16 code bytes
// of every row at a time (four fields: four B tiles per 64 rows): laid out,
// given to the tiles, finished. (Two chunks in flight, as the scores do it,
// were 1.15x slower in decode for the L1 they took.)
template <int H>
void accumulate_q2_amx(const RowBlock& b, const float* p, size_t ps, float* acc) {
  constexpr int V = (H + kQ2IntQueryHeads - 1) / kQ2IntQueryHeads;
  configure_tiles();
  const int d = b.d, g = b.g, qn = g / 4, ng = d / g, n = b.n, chunks = qn / 16;
  const int steps = (n + 63) / 64, nq = 16 * steps;  // 64 rows a step; the last one's rows past n weigh 0
  const size_t gb = 4 + (size_t)qn;
  const uint8_t* rows[kMaxTileRows];  // rows past the block repeat the last one
  for (int j = 0; j < 4 * nq; ++j) rows[j] = b.rows + (size_t)std::min(j, n - 1) * b.stride;
  GroupHeaders hd;
  // The A tiles [view][step]; rows of absent heads and of rows past n stay zero.
  alignas(64) int8_t digits[V][2][kRows * 64];
  std::memset(digits, 0, sizeof digits);
  alignas(64) uint8_t codes[4][2 * kTileBytes];  // [field][step]
  alignas(64) int32_t sums[4][V][kRows * 16];    // [field][view]
  float step[H], lo_sum[H];
  const __m512i order = _mm512_load_si512(kQuadOrder);

  for (int gi = 0; gi < ng; ++gi) {
    for (int c = 0; c < chunks; ++c) {
      for (int qd = 0; qd < nq; ++qd) {
        if (gi == 0 && c == 0 && 4 * qd < n) prefetch_ahead(b, 4 * qd, 4);  // a quad's share, on the first pass
        const __m512i x = quad_codes(rows + 4 * qd, gi * gb + 4 + 16 * c, order);
        _mm512_store_si512(codes[0] + qd * 64, code_field<0>(x));
        _mm512_store_si512(codes[1] + qd * 64, code_field<1>(x));
        _mm512_store_si512(codes[2] + qd * 64, code_field<2>(x));
        _mm512_store_si512(codes[3] + qd * 64, code_field<3>(x));
      }
      if (c == 0) {  // the group's weights, while the first chunk's stores drain
        group_headers(b, gi * gb, hd);
        for (int h = 0; h < H; ++h) {
          int8_t* a = digits[h / kQ2IntQueryHeads][0] + (h % kQ2IntQueryHeads) * kT * 64;
          step[h] = weight_digits(p + (size_t)h * ps, hd, n, &lo_sum[h], [&](int v, __m512i x) {
            // Rows 16v..16v+15: step v / 4, bytes 16 (v % 4) of the head's three rows.
            int8_t* at = a + (v / 4) * (kRows * 64) + 16 * (v % 4);
            _mm_store_si128(reinterpret_cast<__m128i*>(at), _mm512_castsi512_si128(x));
            _mm_store_si128(reinterpret_cast<__m128i*>(at + 64), _mm512_extracti32x4_epi32(x, 1));
            _mm_store_si128(reinterpret_cast<__m128i*>(at + 128), _mm512_extracti32x4_epi32(x, 2));
          });
        }
        for (int v = 0; v < V; ++v)
          for (int s = 0; s < steps; ++s) load_digits(2 + 2 * v + s, digits[v][s]);
      }
      for (int k = 0; k < 4; ++k) {
        tile_zero<0>();
        if (V > 1) tile_zero<1>();
        tile_load<6>(codes[k]);
        tile_dot<0, 2, 6>();
        if (V > 1) tile_dot<1, 4, 6>();
        if (steps > 1) {
          tile_load<7>(codes[k] + kTileBytes);
          tile_dot<0, 3, 7>();
          if (V > 1) tile_dot<1, 5, 7>();
        }
        tile_store<0>(sums[k][0]);
        if (V > 1) tile_store<1>(sums[k][V - 1]);
      }
      // Values gi*g + k*qn + 16c .. +15 of each head, for field k: the digit
      // sums in base 256, times the step, plus the group's offset sum.
      for (int k = 0; k < 4; ++k)
        for (int h = 0; h < H; ++h) {
          const int v = h / kQ2IntQueryHeads, row = (h % kQ2IntQueryHeads) * kT;
          float* out = acc + (size_t)h * d + gi * g + k * qn + 16 * c;
          _mm512_storeu_ps(out, _mm512_fmadd_ps(digit_sum(sums[k][v] + row * 16), _mm512_set1_ps(step[h]),
                                                _mm512_add_ps(_mm512_loadu_ps(out), _mm512_set1_ps(lo_sum[h]))));
        }
    }
  }
}

void accumulate_q2(const RowBlock& b, const float* p, size_t stride, int n_heads, float* acc, float*) {
  with_heads(n_heads, [&](auto h) { accumulate_q2_amx<decltype(h)::value>(b, p, stride, acc); });
}

}  // namespace

IntRowKernels amx_row_kernels() { return {score_q2, accumulate_q2, true, kAmxMaxScoreDim}; }

}  // namespace oscar::attention::detail
