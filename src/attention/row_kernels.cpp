#include "attention/row_kernels.h"

#include <algorithm>
#include <cmath>

#include "attention/attention_kernels.h"
#include "attention/row_kernels_impl.h"
#include "core/prefetch.h"
#include "kernels/ops.h"

namespace oscar::attention {

namespace detail {

void prepare_q2_int_query(const float* q_heads, int n_heads, int d, int g, float scale, bool tile_layout,
                          Q2IntQuery& out) {
  constexpr int T = kQ2IntDigits;
  const int ng = d / g, qn = g / 4;
  out.digits.assign(q2_int_query_bytes(d), 0);
  out.lo_weight.resize((size_t)n_heads * ng);
  out.out_scale.resize((size_t)n_heads);
  const double top = 127.0 * std::pow(256.0, T - 1);
  for (int h = 0; h < n_heads; ++h) {
    const float* q = q_heads + (size_t)h * d;
    float mx = 0.0f;
    for (int i = 0; i < d; ++i) mx = std::max(mx, std::fabs(q[i]));
    const double step = mx > 0.0f ? mx / top : 1.0;
    for (int gi = 0; gi < ng; ++gi) {
      double sum = 0;
      for (int r = 0; r < g; ++r) {  // value gi*g + r: field k of code byte b
        const float v = q[gi * g + r];
        sum += v;
        const int k = r / qn, b = r % qn;
        int8_t* slot = out.digits.data() + (((size_t)gi * (qn / 4) + b / 4) * 4 + k) * kQ2IntSlotBytes;
        long long x = std::llround(v / step);
        for (int t = T - 1; t >= 0; --t) {
          const int digit = t == 0 ? (int)x : (int)(((x + 128) & 255) - 128);
          x = (x - digit) / 256;
          slot[(h * T + t) * 4 + b % 4] = (int8_t)digit;
        }
      }
      out.lo_weight[(size_t)h * ng + gi] = (float)(sum / step);
    }
    out.out_scale[(size_t)h] = (float)(step * scale);
  }
  out.tile_digits.clear();
  if (tile_layout) {
    constexpr int kSlots = 16;  // 4-value slots per tile row of 64 bytes
    out.tile_digits.resize(q2_int_tile_bytes(d));
    for (int s = 0; s < d / 64; ++s)
      for (int row = 0; row < kQ2IntTileRows; ++row)
        for (int i = 0; i < kSlots; ++i)
          std::copy_n(out.digits.data() + (size_t)(kSlots * s + i) * kQ2IntSlotBytes + row * 4, 4,
                      out.tile_digits.data() + s * kQ2IntTileBytes + row * 64 + i * 4);
  }
  out.g = g;
  out.scale = scale;
}

}  // namespace detail

namespace {

// The SIMD set for float rows (f16 or f32) of d values, or null for the generic path.
const detail::RowKernels* float_set(const AttentionKernels& k, int d) {
  if (k.wide.takes_float(d)) return &k.wide;
  if (k.narrow.takes_float(d)) return &k.narrow;
  return nullptr;
}

const detail::RowKernels* set_for(const AttentionKernels& k, const kv::RowCodec& c, int d) {
  if (c.type() == kv::CacheType::F16) return float_set(k, d);
  if (c.type() != kv::CacheType::Q2_0) return nullptr;
  const int g = c.q2_group_size();
  if (k.wide.takes_q2(d, g)) return &k.wide;
  if (k.narrow.takes_q2(d, g)) return &k.narrow;
  return nullptr;
}

// The heads one integer q2_0 kernel call would take: all of them, or with
// int_chunks (GroupQuery) at most kQ2IntCallHeads, the rest in more calls.
int int_call_heads(int n_heads, bool int_chunks) {
  return int_chunks ? std::min(n_heads, detail::kQ2IntCallHeads) : n_heads;
}

// Cached rows stored back to back: a stream worth prefetching (RowBlock).
bool streamed(const kv::RowCodec& codec, size_t row_stride) { return row_stride == codec.row_bytes(); }

// A SIMD score kernel over all heads of the group, max_heads at a time.
void score_tiles(const detail::RowKernels& set, detail::ScoreKernel k, const detail::RowBlock& b,
                 const GroupQuery& gq, float scale, float* scores, size_t stride) {
  const int tile = set.max_heads;
  detail::RowBlock bt = b;
  for (int h0 = 0; h0 < gq.n_heads; h0 += tile) {
    k(bt, gq.q + (size_t)h0 * b.d, std::min(tile, gq.n_heads - h0), scale, scores + (size_t)h0 * stride, stride);
    bt.streamed = false;  // the first tile brought the rows into cache
    bt.along = {};        // and asked for the other stream's
  }
}

// A SIMD accumulate kernel over `all`'s rows in blocks of at most
// kMaxTileRows (the q2 scratch bound) and all heads, `tile` at a time.
void accumulate_tiles(detail::AccumulateKernel k, int tile, const detail::RowBlock& all, const float* p, size_t stride,
                      int n_heads, float* acc) {
  float scratch[detail::kMaxTileHeads * (detail::kMaxTileRows + 1) * detail::kMaxGroups];
  for (int j0 = 0; j0 < all.n; j0 += detail::kMaxTileRows) {
    const int n = std::min(detail::kMaxTileRows, all.n - j0);
    detail::RowBlock b{all.rows + (size_t)j0 * all.stride, all.stride, n, all.d, all.g, all.streamed};
    for (int h0 = 0; h0 < n_heads; h0 += tile) {
      k(b, p + (size_t)h0 * stride + j0, stride, std::min(tile, n_heads - h0), acc + (size_t)h0 * all.d, scratch);
      b.streamed = false;  // the first tile brought the rows into cache
    }
  }
}

}  // namespace

void score_rows(const AttentionKernels& k, const kv::RowCodec& codec, const uint8_t* rows, size_t row_stride, int n_rows,
                const GroupQuery& gq, float scale, float* scores, size_t stride, float* tmp, RowsAhead along) {
  const int d = gq.d;
  if (const detail::RowKernels* set = set_for(k, codec, d)) {
    const bool q2 = codec.type() == kv::CacheType::Q2_0;
    const detail::RowBlock b{rows, row_stride, n_rows, d, q2 ? codec.q2_group_size() : 0, streamed(codec, row_stride),
                             along};
    const detail::IntRowKernels& integer = k.integer;
    constexpr int kPrepared = kQ2IntQueryHeads, kCall = detail::kQ2IntCallHeads;
    if (q2 && gq.q2_int && integer.takes_q2(d, b.g, int_call_heads(gq.n_heads, gq.int_chunks))) {
      // Each prepared query holds 4 heads; a call takes up to two of them.
      detail::Q2IntView views[kCall / kPrepared];
      detail::RowBlock bc = b;
      for (int h0 = 0; h0 < gq.n_heads; h0 += kCall) {
        const int call_heads = std::min(kCall, gq.n_heads - h0);
        for (int c = 0; c * kPrepared < call_heads; ++c) {
          const int hc = h0 + c * kPrepared;
          Q2IntQuery& iq = gq.q2_int[hc / kPrepared];
          if (iq.g != b.g || iq.scale != scale)
            detail::prepare_q2_int_query(gq.q + (size_t)hc * d, std::min(kPrepared, gq.n_heads - hc), d, b.g, scale,
                                         integer.tile_digits, iq);
          views[c] = {iq.digits.data(), iq.tile_digits.data(), iq.lo_weight.data(), iq.out_scale.data()};
        }
        integer.score_q2(bc, views, call_heads, scores + (size_t)h0 * stride, stride);
        bc.streamed = false;  // the first call brought the rows into cache
        bc.along = {};        // and asked for the other stream's
      }
      return;
    }
    score_tiles(*set, q2 ? set->score_q2 : set->score_f16, b, gq, scale, scores, stride);
    return;
  }
  // Generic path (any type, any shape): decode the row once, then one dot per head.
  prefetch_lines(along.p, along.bytes);
  for (int j = 0; j < n_rows; ++j) {
    codec.decode(rows + (size_t)j * row_stride, tmp);
    for (int h = 0; h < gq.n_heads; ++h)
      scores[(size_t)h * stride + j] = kernels::dot_f32(gq.q + (size_t)h * d, tmp, d) * scale;
  }
}

void accumulate_rows(const AttentionKernels& k, const kv::RowCodec& codec, const uint8_t* rows, size_t row_stride, int n_rows,
                     const float* p, size_t stride, int n_heads, float* acc, float* tmp, bool int_chunks,
                     bool rows_asked) {
  const int d = codec.dim();
  if (const detail::RowKernels* set = set_for(k, codec, d)) {
    const bool q2 = codec.type() == kv::CacheType::Q2_0;
    const detail::IntRowKernels& integer = k.integer;
    const detail::RowBlock b{rows, row_stride, n_rows, d, q2 ? codec.q2_group_size() : 0,
                             streamed(codec, row_stride) && !rows_asked};
    if (q2 && integer.accumulates_q2(d, b.g, int_call_heads(n_heads, int_chunks))) {
      accumulate_tiles(integer.accumulate_q2, detail::kQ2IntCallHeads, b, p, stride, n_heads, acc);
      return;
    }
    accumulate_tiles(q2 ? set->accumulate_q2 : set->accumulate_f16, set->max_heads, b, p, stride, n_heads, acc);
    return;
  }
  for (int j = 0; j < n_rows; ++j) {
    codec.decode(rows + (size_t)j * row_stride, tmp);
    for (int h = 0; h < n_heads; ++h) kernels::axpy(p[(size_t)h * stride + j], tmp, acc + (size_t)h * d, d);
  }
}

void score_rows_f32(const AttentionKernels& k, const float* rows, size_t row_stride, int n_rows, const GroupQuery& gq, float scale,
                    float* scores, size_t stride) {
  const int d = gq.d;
  if (const detail::RowKernels* set = float_set(k, d)) {
    score_tiles(*set, set->score_f32, {reinterpret_cast<const uint8_t*>(rows), row_stride * sizeof(float), n_rows, d, 0},
                gq, scale, scores, stride);
    return;
  }
  for (int j = 0; j < n_rows; ++j)
    for (int h = 0; h < gq.n_heads; ++h)
      scores[(size_t)h * stride + j] = kernels::dot_f32(gq.q + (size_t)h * d, rows + (size_t)j * row_stride, d) * scale;
}

void accumulate_rows_f32(const AttentionKernels& k, const float* rows, size_t row_stride, int n_rows, const float* p, size_t stride,
                         int n_heads, int d, float* acc) {
  if (const detail::RowKernels* set = float_set(k, d)) {
    accumulate_tiles(set->accumulate_f32, set->max_heads,
                     {reinterpret_cast<const uint8_t*>(rows), row_stride * sizeof(float), n_rows, d, 0}, p, stride,
                     n_heads, acc);
    return;
  }
  for (int j = 0; j < n_rows; ++j)
    for (int h = 0; h < n_heads; ++h) kernels::axpy(p[(size_t)h * stride + j], rows + (size_t)j * row_stride, acc + (size_t)h * d, d);
}

float exp_shifted(const AttentionKernels& k, const float* s, float m, float* p, int n, float* m_new) {
  if (k.wide.exp_shifted) return k.wide.exp_shifted(s, m, p, n, m_new);
  if (k.narrow.exp_shifted) return k.narrow.exp_shifted(s, m, p, n, m_new);
  float mx = m;
  for (int j = 0; j < n; ++j) mx = std::max(mx, s[j]);
  *m_new = mx;
  float sum = 0.0f;
  for (int j = 0; j < n; ++j) sum += p[j] = std::exp(s[j] - mx);
  return sum;
}

void exp_shifted_heads(const AttentionKernels& k, const float* s, size_t stride, int heads, const float* m, float* p, int n, float* m_new,
                       float* sums) {
  if (k.wide.exp_shifted_heads) return k.wide.exp_shifted_heads(s, stride, heads, m, p, n, m_new, sums);
  if (k.narrow.exp_shifted_heads) return k.narrow.exp_shifted_heads(s, stride, heads, m, p, n, m_new, sums);
  for (int h = 0; h < heads; ++h)
    sums[h] = exp_shifted(k, s + (size_t)h * stride, m[h], p + (size_t)h * stride, n, &m_new[h]);
}

}  // namespace oscar::attention
