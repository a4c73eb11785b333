// Internal to the row kernels: one block of cached rows in its stored form,
// and the per-ISA kernels row_kernels.cpp dispatches to. Every SIMD kernel
// has the generic decode-then-dot path of row_kernels.cpp as its reference
// (tests/attention/test_row_kernels.cpp checks them against each other).
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>

#include "attention/row_kernels.h"
#include "core/prefetch.h"

namespace oscar::attention::detail {

constexpr int kMaxGroups = 16;    // q2 groups per row the SIMD kernels take (d / g)
constexpr int kMaxTileHeads = 8;  // most query heads one kernel call of any set handles
constexpr int kMaxTileRows = 128;  // rows one accumulate call handles (attention_fused's largest block)

struct RowBlock {
  const uint8_t* rows = nullptr;
  size_t stride = 0;  // bytes between consecutive rows
  int n = 0;          // rows
  int d = 0;          // values per row
  int g = 0;          // q2_0 group size (q2 kernels only)
  // The rows come from memory (cached rows, which decode streams) and lie
  // back to back (stride = row size): the kernels prefetch ahead.
  bool streamed = false;
  // Bytes another stream reads next (RowsAhead), asked for a share at a
  // time as the kernel goes through the rows.
  RowsAhead along = {};
};

// Prefetches what rows [j, j + n) of b stand for: their bytes
// kStreamPrefetchBytes further on, and their share of b.along. Without the
// first the f16 score kernel ran at half its in-cache speed on rows from
// memory: the hardware prefetchers did not keep ahead of a loop that is
// mostly FMAs (docs/decisions/0006-software-prefetch.md). The lines may lie past the
// rows' end (the next block of the same stream; a prefetch of any address is
// harmless).
inline void prefetch_ahead(const RowBlock& b, int j, int n) {
  if (b.streamed) prefetch_lines(b.rows + (size_t)j * b.stride + kStreamPrefetchBytes, (size_t)n * b.stride);
  if (b.along.bytes) prefetch_part(b.along.p, b.along.bytes, (size_t)j, (size_t)std::min(j + n, b.n), (size_t)b.n);
}

// scores[h * stride + j] = scale * q_h . x_j  (q: (n_heads, d)), n_heads <= RowKernels::max_heads
using ScoreKernel = void (*)(const RowBlock& b, const float* q, int n_heads, float scale, float* scores,
                             size_t stride);
// acc[h * d + i] += p[h * stride + j] * x_j[i], n_heads <= RowKernels::max_heads, n <= kMaxTileRows;
// scratch holds >= n_heads * (n + 1) * (d / g) floats (q2 only).
using AccumulateKernel = void (*)(const RowBlock& b, const float* p, size_t stride, int n_heads, float* acc,
                                  float* scratch);

// *m_new = max(m, s[0..n)); p[j] = exp(s[j] - *m_new); returns the sum of p.
using ExpKernel = float (*)(const float* s, float m, float* p, int n, float* m_new);
// The same for `heads` heads, head h's scores and weights h * stride apart:
// m[h], m_new[h], sums[h].
using ExpHeadsKernel = void (*)(const float* s, size_t stride, int heads, const float* m, float* p, int n,
                                float* m_new, float* sums);
constexpr int kExpHeads = 4;  // heads one pass of the SIMD ExpHeadsKernel interleaves

struct RowKernels {
  ScoreKernel score_f16 = nullptr, score_q2 = nullptr;
  AccumulateKernel accumulate_f16 = nullptr, accumulate_q2 = nullptr;
  // f32 rows: the keys and values of the batch itself (prompt processing).
  ScoreKernel score_f32 = nullptr;
  AccumulateKernel accumulate_f32 = nullptr;
  ExpKernel exp_shifted = nullptr;
  ExpHeadsKernel exp_shifted_heads = nullptr;
  int max_heads = 0;  // query heads one call takes (register budget of the ISA)
  int width = 0;      // floats per vector

  // Shapes the kernels take: whole vectors of values (f16 and f32 rows), and
  // q2 groups whose quarters (g / 4 codes, one 2-bit field of each code
  // byte) are whole vectors.
  bool takes_float(int d) const { return score_f16 && d > 0 && d % width == 0; }
  bool takes_q2(int d, int g) const {
    return score_q2 && g > 0 && g % (4 * width) == 0 && d % g == 0 && d / g <= kMaxGroups;
  }
};

// q2_0 scores from integer dot products against the query as
// kQ2IntDigits signed bytes per value, most significant first:
// q_i = step * sum_t D_t[i] 256^(T-1-t) up to rounding (Q2IntQuery).
constexpr int kQ2IntDigits = 3;
// Query heads one integer kernel call takes (scores: two prepared queries).
// Gemma-4's groups of 8 heads then transpose and mask each block's codes
// once, not once per 4 heads; see IntRowKernels.
constexpr int kQ2IntCallHeads = 2 * kQ2IntQueryHeads;
// Digits are stored in the order the kernel reads them. Code byte b of a
// group holds, in its 2-bit field k, the code of value k*(g/4) + b; the
// kernel takes four bytes (a word) at a time. For each group gi, word m and
// field k, in that order, a slot of kQ2IntSlotBytes holds, for each head h
// and digit t (at (h * kQ2IntDigits + t) * 4), the digits of values
// gi*g + k*(g/4) + 4m .. +3.
constexpr size_t kQ2IntSlotBytes = (size_t)kQ2IntQueryHeads * kQ2IntDigits * 4;
// Bytes of a prepared query for rows of d values: a slot per 4 values.
constexpr size_t q2_int_query_bytes(int d) { return (size_t)d / 4 * kQ2IntSlotBytes; }

// The same digits as AMX tiles (row_kernels_amx.cpp), for the kernel sets
// that ask for them (IntRowKernels::tile_digits): per 64 values (16 slots),
// one tile of kQ2IntTileRows rows of 64 bytes, row h * kQ2IntDigits + t
// holding digit t of head h for those 16 slots in slot order, 4 bytes each.
// Rows of heads the query lacks are zero.
constexpr int kQ2IntTileRows = kQ2IntQueryHeads * kQ2IntDigits;
constexpr size_t kQ2IntTileBytes = (size_t)kQ2IntTileRows * 64;
constexpr size_t q2_int_tile_bytes(int d) { return (size_t)d / 64 * kQ2IntTileBytes; }

// A prepared query: digits (q2_int_query_bytes(d)), tile_digits (where asked
// for), lo_weight[h * (d/g) + gi] = sum of head h's group gi / step_h, and
// out_scale[h] = step_h * the score scale.
struct Q2IntView {
  const int8_t* digits = nullptr;
  const int8_t* tile_digits = nullptr;
  const float* lo_weight = nullptr;
  const float* out_scale = nullptr;
};
// Prepares the query of n_heads <= kQ2IntQueryHeads heads (q_heads: (n_heads,
// d), post-rotation) for rows of group size g, and scores scaled by scale:
// q_i = step * sum_t D_t[i] 256^(T-1-t) + rounding, |rounding| <= step / 2,
// with step = max |q_i| / (127 * 256^(T-1)) per head: balanced base-256
// digits, so every digit is a signed byte (the top one within +-127). With
// tile_layout, also lays the digits out as AMX tiles (q2_int_tile_bytes).
void prepare_q2_int_query(const float* q_heads, int n_heads, int d, int g, float scale, bool tile_layout,
                          Q2IntQuery& out);

// scores[h * stride + j] = scale * q_h . x_j for n_heads <= kQ2IntCallHeads;
// q[c] is the prepared query of heads 4c .. 4c + 3.
using IntScoreKernel = void (*)(const RowBlock& b, const Q2IntView* q, int n_heads, float* scores, size_t stride);

// q2_0 value sums from integer dot products: each row's weight p_j * s_j as
// kQ2IntWeightDigits signed bytes per (group, head), scaled to the group's
// largest weight (row_kernels_avx512vbmi.cpp), for up to kQ2IntCallHeads heads
// and blocks of up to kMaxTileRows rows. Two digits (16 bits) were
// about 1.5x faster at 4 heads but broke the 1e-4 fused-vs-reference bound.
constexpr int kQ2IntWeightDigits = 3;
constexpr int kQ2IntMaxValueGroup = 512;

// Both take groups of up to kQ2IntCallHeads query heads in one call. Calls of
// 4 heads each passed over a row once per 4 heads, and at Gemma-4's 8 heads
// of 512 decode was 10% (scores) and 7% (value sums) slower with them than
// with the float kernels (session 12); in one call of 8 heads the scores
// are 1.5x and the value sums 1.2x faster than the float kernels
// (docs/decisions/0004-integer-q2_0-kernels-and-amx.md).
struct IntRowKernels {
  IntScoreKernel score_q2 = nullptr;
  AccumulateKernel accumulate_q2 = nullptr;
  bool tile_digits = false;  // score_q2 reads Q2IntView::tile_digits
  int max_score_dim = 0;     // the largest head dim score_q2 takes; 0: any
  // Scores: a group's code bytes in a row are a multiple of 32, the unit
  // the kernel transposes (8 words of 16 rows).
  bool takes_q2(int d, int g, int heads) const {
    return score_q2 && heads <= kQ2IntCallHeads && g > 0 && g % 128 == 0 && d % g == 0 &&
           (max_score_dim == 0 || d <= max_score_dim);
  }
  // Value sums: quarters of a group are whole 16-byte loads, and a group's
  // transposed codes fit the kernel's buffer.
  bool accumulates_q2(int d, int g, int heads) const {
    return accumulate_q2 && heads <= kQ2IntCallHeads && g > 0 && g % 64 == 0 && g <= kQ2IntMaxValueGroup && d % g == 0;
  }
};

// AVX2 + FMA + F16C kernels, 8 floats per vector (row_kernels_avx2.cpp;
// x86-64 only, call only when the CPU has them), and for AVX-512 F/BW/VL/DQ
// (row_kernels_avx512.cpp): 16 floats per vector, and 8 (with AVX-512VL's
// 32 registers) for the shapes the 16-wide set does not take.
RowKernels avx2_row_kernels();
RowKernels avx512_row_kernels();
RowKernels avx512_narrow_row_kernels();
// AVX-512 F/BW/VL/DQ + VNNI (row_kernels_avx512vnni.cpp): the scores; the
// value sums need VBMI as well (row_kernels_avx512vbmi.cpp).
IntRowKernels avx512vnni_row_kernels();
AccumulateKernel avx512vbmi_q2_accumulate_kernel();
// The same sums on AMX-INT8 tiles (row_kernels_amx.cpp; also needs
// AVX512-VBMI and GFNI, and CpuFeatures::amx_int8: the OS's permission).
// Its scores take head dims up to kAmxMaxScoreDim (the largest any
// supported model has), for which its buffers are sized.
constexpr int kAmxMaxScoreDim = 512;
IntRowKernels amx_row_kernels();

// AArch64 NEON (row_kernels_neon.cpp; every ARMv8 CPU): 4 floats per vector,
// up to 8 heads per call.
RowKernels neon_row_kernels();

}  // namespace oscar::attention::detail
