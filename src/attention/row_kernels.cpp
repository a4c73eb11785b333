#include "attention/row_kernels.h"

#include "core/fp16.h"

#if defined(OSCAR_X86)
#include <immintrin.h>
#endif
#include "kernels/ops.h"

namespace oscar::attention {

namespace {

inline float load_f16(const uint8_t* p) { return fp16_to_f32((uint16_t)(p[0] | (p[1] << 8))); }

// Unpacks the codes of one q2_0 row into floats 0..3 (in value order) and
// returns per-group scale and offset; no dequantised value is formed.
void unpack_q2(const uint8_t* row, int d, int g, float* codes, float* s, float* lo) {
  const int q = g / 4;
  for (int g0 = 0, gi = 0; g0 < d; g0 += g, ++gi) {
    s[gi] = load_f16(row);
    lo[gi] = load_f16(row + 2);
    const uint8_t* c = row + 4;
    for (int k = 0; k < 4; ++k)
      for (int j = 0; j < q; ++j) codes[g0 + k * q + j] = (float)((c[j] >> (2 * k)) & 3);
    row += 4 + q;
  }
}

void decode_f16_scalar(const uint8_t* row, float* out, int d) {
  for (int i = 0; i < d; ++i) out[i] = load_f16(row + 2 * i);
}

#if defined(OSCAR_X86)
// f16 rows are read once per key per step: the hardware conversion is
// several times faster than the exact scalar one (same results: both exact).
__attribute__((target("avx,f16c"))) void decode_f16_f16c(const uint8_t* row, float* out, int d) {
  int i = 0;
  for (; i + 8 <= d; i += 8)
    _mm256_storeu_ps(out + i, _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(row + 2 * i))));
  for (; i < d; ++i) out[i] = load_f16(row + 2 * i);
}
#endif

void decode_f16_row(const uint8_t* row, float* out, int d) {
#if defined(OSCAR_X86)
  // Read once per process from cpuid; immutable afterwards.
  static const bool has_f16c = __builtin_cpu_supports("f16c") && __builtin_cpu_supports("avx");
  if (has_f16c) return decode_f16_f16c(row, out, d);
#endif
  decode_f16_scalar(row, out, d);
}

}  // namespace

void score_rows(const kv::RowCodec& codec, const uint8_t* rows, size_t row_stride, int n_rows,
                const GroupQuery& gq, float scale, float* scores, size_t stride, float* tmp) {
  const int d = gq.d;
  if (codec.type() == kv::CacheType::Q2_0) {
    const int g = codec.q2_group_size(), ng = d / g;
    float s[128], lo[128];  // d / g <= 512 / 4
    for (int j = 0; j < n_rows; ++j) {
      unpack_q2(rows + (size_t)j * row_stride, d, g, tmp, s, lo);
      for (int h = 0; h < gq.n_heads; ++h) {
        const float* q = gq.q + (size_t)h * d;
        const float* qs = gq.q_group_sums + (size_t)h * ng;
        float total = 0;
        for (int gi = 0; gi < ng; ++gi)
          total += s[gi] * kernels::dot_f32(q + gi * g, tmp + gi * g, g) + lo[gi] * qs[gi];
        scores[(size_t)h * stride + j] = total * scale;
      }
    }
    return;
  }
  for (int j = 0; j < n_rows; ++j) {
    const uint8_t* row = rows + (size_t)j * row_stride;
    if (codec.type() == kv::CacheType::F16) decode_f16_row(row, tmp, d);
    else codec.decode(row, tmp);
    for (int h = 0; h < gq.n_heads; ++h)
      scores[(size_t)h * stride + j] = kernels::dot_f32(gq.q + (size_t)h * d, tmp, d) * scale;
  }
}

void accumulate_rows(const kv::RowCodec& codec, const uint8_t* rows, size_t row_stride, int n_rows,
                     const float* p, size_t stride, int n_heads, float* acc, float* tmp) {
  const int d = codec.dim();
  if (codec.type() == kv::CacheType::Q2_0) {
    const int g = codec.q2_group_size(), ng = d / g;
    float s[128], lo[128];  // d / g <= 512 / 4
    for (int j = 0; j < n_rows; ++j) {
      unpack_q2(rows + (size_t)j * row_stride, d, g, tmp, s, lo);
      for (int h = 0; h < n_heads; ++h) {
        const float w = p[(size_t)h * stride + j];
        float* a = acc + (size_t)h * d;
        for (int gi = 0; gi < ng; ++gi) {
          const float ws = w * s[gi], wlo = w * lo[gi];
          float* ag = a + gi * g;
          const float* c = tmp + gi * g;
          for (int i = 0; i < g; ++i) ag[i] += wlo + ws * c[i];
        }
      }
    }
    return;
  }
  for (int j = 0; j < n_rows; ++j) {
    const uint8_t* row = rows + (size_t)j * row_stride;
    if (codec.type() == kv::CacheType::F16) decode_f16_row(row, tmp, d);
    else codec.decode(row, tmp);
    for (int h = 0; h < n_heads; ++h) kernels::axpy(p[(size_t)h * stride + j], tmp, acc + (size_t)h * d, d);
  }
}

}  // namespace oscar::attention
