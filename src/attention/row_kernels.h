// Per-row work of the fused attention for one GQA group: scores of a block of
// cached rows against every query head of the group, and the weighted sum of
// value rows into every head's accumulator. Rows are read in place in their
// stored format; q2_0 rows are used through their 2-bit codes.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

#include "kv/cache_type.h"

namespace oscar::attention {

// Every function below runs the kernels of the table it is given
// (attention_kernels.h): SIMD ones where the table has a set that takes the
// shape, else the generic path.
struct AttentionKernels;

// The query heads of a group as integer digits, for q2_0 score kernels that
// use integer dot products (where the CPU has them). score_rows fills it on
// the first q2_0 block it scores and reuses it for the query's later blocks;
// the owner calls forget() whenever the query changes.
constexpr int kQ2IntQueryHeads = 4;  // query heads one Q2IntQuery holds: one integer kernel call
struct Q2IntQuery {
  int g = 0;  // q2 group size it was made for; 0: not made
  float scale = 0.0f;
  std::vector<int8_t> digits, tile_digits;
  std::vector<float> lo_weight, out_scale;
  void forget() { g = 0; }
};

struct GroupQuery {
  const float* q = nullptr;  // (n_heads, d), post-rotation
  int n_heads = 0;
  int d = 0;
  // One query per kQ2IntQueryHeads heads (ceil of n_heads over it). Null:
  // float kernels only.
  Q2IntQuery* q2_int = nullptr;
  // More heads than one integer kernel call takes go to the integer q2_0
  // kernels, that many at a time, only when set; otherwise to the float ones.
  bool int_chunks = false;
};

// Bytes another stream of cached rows reads next (the fused attention's V
// rows of a block while its K rows are scored). The kernels ask for them a
// share at a time among their own work: asked for at once, as one burst of
// prefetches before each block, they waited for free fill buffers, 65 TSC a
// row of f16 d128 rows in decode (docs/decisions/0006-software-prefetch.md).
struct RowsAhead {
  const uint8_t* p = nullptr;
  size_t bytes = 0;
};

// scores[h * stride + j] = scale * q_h . k_j for j < n_rows; the kernels
// ask for `along` a share at a time.
void score_rows(const AttentionKernels& k, const kv::RowCodec& codec, const uint8_t* rows, size_t row_stride, int n_rows,
                const GroupQuery& gq, float scale, float* scores, size_t stride, float* tmp, RowsAhead along = {});

// acc[h * d + i] += p[h * stride + j] * v_j[i] for j < n_rows. int_chunks as
// in GroupQuery. rows_asked: an earlier call asked for these rows (its
// `along`), so the kernels do not ask for them again, a fixed distance
// ahead, as they do for rows nobody asked for; asked for twice, q2_0 decode
// attention at 16K ran 2-5% slower (docs/decisions/0006-software-prefetch.md).
void accumulate_rows(const AttentionKernels& k, const kv::RowCodec& codec, const uint8_t* rows, size_t row_stride, int n_rows,
                     const float* p, size_t stride, int n_heads, float* acc, float* tmp, bool int_chunks = false,
                     bool rows_asked = false);

// The same for rows of f32 values `row_stride` floats apart (the batch's own
// keys and values, not yet stored in the cache).
void score_rows_f32(const AttentionKernels& k, const float* rows, size_t row_stride, int n_rows, const GroupQuery& gq, float scale,
                    float* scores, size_t stride);
void accumulate_rows_f32(const AttentionKernels& k, const float* rows, size_t row_stride, int n_rows, const float* p, size_t stride,
                         int n_heads, int d, float* acc);

// The softmax weights of a block against a running maximum m: *m_new =
// max(m, s[0..n)), p[j] = exp(s[j] - *m_new) for j < n; returns their sum.
// Vectorised where the CPU allows (a few ulp from std::exp), std::exp
// otherwise.
float exp_shifted(const AttentionKernels& k, const float* s, float m, float* p, int n, float* m_new);
// The same for `heads` heads of a block at once (head h's scores and weights
// h * stride apart; running maxima m[h], new ones m_new[h], sums[h]),
// exactly as many exp_shifted calls would give them, in less time.
void exp_shifted_heads(const AttentionKernels& k, const float* s, size_t stride, int heads, const float* m, float* p, int n, float* m_new,
                       float* sums);

}  // namespace oscar::attention
