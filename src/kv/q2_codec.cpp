#include "kv/q2_codec.h"

#include <algorithm>
#include <cmath>
#include <vector>

#include "core/fp16.h"
#include "kv/q2_codec_simd.h"

namespace oscar::kv {

int q2_group(int d, const Q2Params& p) { return p.group_size > 0 ? p.group_size : d; }

bool q2_valid(int d, const Q2Params& p) {
  const int g = q2_group(d, p);
  return d > 0 && g >= 4 && g % 4 == 0 && d % g == 0;
}

size_t q2_row_bytes(int d, const Q2Params& p) {
  const int g = q2_group(d, p);
  return (size_t)(d / g) * (4 + (size_t)g / 4);
}

int q2_clip_rank(int d, float ratio) {
  // floor(ratio * d) of the ratio as written (0.35 * 20 = 7), not of its
  // float rounding (0.35f * 20 = 6.99999988): allow for the float error.
  const int k = (int)std::floor((double)ratio * d * (1.0 + 1e-6));
  return std::clamp(k, 0, d - 1);
}

float q2_clip_threshold(const float* x, int d, float ratio) {
  const int k = q2_clip_rank(d, ratio);
  // The value of rank k is the m-th largest |x_i|. OSCAR's ratios (0.92,
  // 0.96) make m a handful, so the m largest are kept in a small sorted list
  // that most values fail to enter: one comparison each, no copy of the row.
  // Every row leaving the recent tier goes through here (twice, K and V), and
  // the copy and full selection it replaced were most of the q2_0 encoder.
  const int m = d - k;
  constexpr int kMaxTop = 16;
  if (m <= kMaxTop) {
    float top[kMaxTop];  // descending; top[m - 1] is the smallest kept
    int n = 0;
    for (int i = 0; i < d; ++i) {
      const float a = std::fabs(x[i]);
      if (n == m && !(a > top[m - 1])) continue;
      int j = n < m ? n++ : m - 1;
      for (; j > 0 && top[j - 1] < a; --j) top[j] = top[j - 1];
      top[j] = a;
    }
    return top[m - 1];
  }
  std::vector<float> a((size_t)d);
  for (int i = 0; i < d; ++i) a[(size_t)i] = std::fabs(x[i]);
  std::nth_element(a.begin(), a.begin() + k, a.end());
  return a[(size_t)k];
}

Q2Encoder::Q2Encoder(const CpuFeatures& cpu) {
#if defined(OSCAR_X86)
  if (cpu.avx512f && cpu.avx512dq) simd_ = detail::q2_encode_avx512, name_ = "avx512";
#elif defined(__aarch64__)
  if (cpu.neon) simd_ = detail::q2_encode_neon, name_ = "neon";
#else
  (void)cpu;
#endif
}

void Q2Encoder::operator()(const float* x, uint8_t* out, int d, const Q2Params& p) const {
  if (simd_ && simd_(x, out, d, p)) return;
  q2_encode_reference(x, out, d, p);
}

void q2_encode_reference(const float* x, uint8_t* out, int d, const Q2Params& p) {
  const int g = q2_group(d, p);
  float buf[1024];
  std::vector<float> big;
  float* v = buf;
  if (d > 1024) {
    big.resize((size_t)d);
    v = big.data();
  }
  std::copy(x, x + d, v);
  if (p.clip_ratio > 0.0f) {
    const float t = q2_clip_threshold(x, d, p.clip_ratio);
    for (int i = 0; i < d; ++i) v[i] = std::clamp(v[i], -t, t);
  }
  const int q = g / 4;
  for (int g0 = 0; g0 < d; g0 += g) {
    const float* xs = v + g0;
    float lo = xs[0], hi = xs[0];
    for (int i = 1; i < g; ++i) {
      lo = std::min(lo, xs[i]);
      hi = std::max(hi, xs[i]);
    }
    const uint16_t s16 = f32_to_fp16((hi - lo) / 3.0f), lo16 = f32_to_fp16(lo);
    // Codes are chosen against the f16 values the decoder will use.
    const float s = fp16_to_f32(s16), l = fp16_to_f32(lo16);
    out[0] = (uint8_t)(s16 & 0xff);
    out[1] = (uint8_t)(s16 >> 8);
    out[2] = (uint8_t)(lo16 & 0xff);
    out[3] = (uint8_t)(lo16 >> 8);
    uint8_t* codes = out + 4;
    for (int j = 0; j < q; ++j) {
      uint8_t b = 0;
      for (int k = 0; k < 4; ++k) {
        // Round half to even, like torch.round, of the exact (x - lo)/s:
        // double keeps x - lo exact and the halfway decisions right (a float
        // subtraction or a reciprocal multiply moves values next to a
        // halfway point onto it).
        const double c = s > 0.0f ? std::nearbyint(((double)xs[j + k * q] - l) / s) : 0.0;
        const int ci = (int)std::clamp(c, 0.0, 3.0);
        b |= (uint8_t)(ci << (2 * k));
      }
      codes[j] = b;
    }
    out += 4 + q;
  }
}

namespace {
inline float load_f16(const uint8_t* p) { return fp16_to_f32((uint16_t)(p[0] | (p[1] << 8))); }
}  // namespace

void q2_decode(const uint8_t* in, float* out, int d, const Q2Params& p) {
  const int g = q2_group(d, p), q = g / 4;
  for (int g0 = 0; g0 < d; g0 += g) {
    const float s = load_f16(in), lo = load_f16(in + 2);
    const uint8_t* codes = in + 4;
    for (int j = 0; j < q; ++j)
      for (int k = 0; k < 4; ++k) out[g0 + j + k * q] = lo + s * (float)((codes[j] >> (2 * k)) & 3);
    in += 4 + q;
  }
}

}  // namespace oscar::kv
