// The q2_0 row encoder on AArch64 NEON (every ARMv8 CPU). Bytes are the same
// as q2_encode_reference's, by the same IEEE operations: the clipping
// threshold is the reference's own (q2_clip_threshold, exact), clamping keeps
// std::clamp's choice for signed zeros, the group range is a vector min/max
// (signed zeros settled by the scalar fold, as in the AVX-512 encoder), and
// codes are nearbyint((x - lo) / s) in double, two values per vector: fdiv
// and frintn (round to nearest, ties to even) on float64x2.
#include <arm_neon.h>

#include <algorithm>
#include <cmath>

#include "core/fp16.h"
#include "kv/q2_codec_simd.h"

namespace oscar::kv::detail {
namespace {

// codes[i] = clamp(nearbyint((x[i] - l) / s), 0, 3) in double, i < g (g % 4 == 0).
void group_codes(const float* xs, int g, float l, float s, uint32_t* codes) {
  const float64x2_t ld = vdupq_n_f64((double)l), sd = vdupq_n_f64((double)s);
  const float64x2_t zero = vdupq_n_f64(0.0), three = vdupq_n_f64(3.0);
  for (int i = 0; i < g; i += 4) {
    const float32x4_t xv = vld1q_f32(xs + i);
    float64x2_t c0 = vdivq_f64(vsubq_f64(vcvt_f64_f32(vget_low_f32(xv)), ld), sd);
    float64x2_t c1 = vdivq_f64(vsubq_f64(vcvt_high_f64_f32(xv), ld), sd);
    c0 = vminq_f64(vmaxq_f64(vrndnq_f64(c0), zero), three);
    c1 = vminq_f64(vmaxq_f64(vrndnq_f64(c1), zero), three);
    const uint32x2_t lo = vmovn_u64(vcvtq_u64_f64(c0)), hi = vmovn_u64(vcvtq_u64_f64(c1));
    vst1q_u32(codes + i, vcombine_u32(lo, hi));
  }
}

}  // namespace

bool q2_encode_neon(const float* x, uint8_t* out, int d, const Q2Params& p) {
  const int g = q2_group(d, p);
  if (d <= 0 || d > kMaxSimdRow || d % 16 != 0 || g % 16 != 0 || d % g != 0) return false;
  alignas(16) float v[kMaxSimdRow];
  const float32x4_t inf = vdupq_n_f32(INFINITY);
  uint32x4_t not_finite = vdupq_n_u32(0);
  for (int i = 0; i < d; i += 4) {
    const float32x4_t xv = vld1q_f32(x + i);
    not_finite = vorrq_u32(not_finite, vmvnq_u32(vcltq_f32(vabsq_f32(xv), inf)));  // inf or NaN
    vst1q_f32(v + i, xv);
  }
  if (vmaxvq_u32(not_finite)) return false;

  if (p.clip_ratio > 0.0f) {
    const float tf = q2_clip_threshold(x, d, p.clip_ratio);
    const float32x4_t t = vdupq_n_f32(tf), nt = vdupq_n_f32(-tf);
    for (int i = 0; i < d; i += 4) {
      // std::clamp(v, -t, t): v < -t ? -t : (t < v ? t : v)
      const float32x4_t r = vld1q_f32(v + i);
      vst1q_f32(v + i, vbslq_f32(vcltq_f32(r, nt), nt, vbslq_f32(vcltq_f32(t, r), t, r)));
    }
  }

  const int q = g / 4;
  alignas(16) uint32_t codes[kMaxSimdRow];
  for (int g0 = 0; g0 < d; g0 += g) {
    const float* xs = v + g0;
    float32x4_t mn = vld1q_f32(xs), mx = mn;
    for (int i = 4; i < g; i += 4) {
      mn = vminq_f32(mn, vld1q_f32(xs + i));
      mx = vmaxq_f32(mx, vld1q_f32(xs + i));
    }
    float lo = vminvq_f32(mn), hi = vmaxvq_f32(mx);
    if (lo == 0.0f || hi == 0.0f) group_range_scalar(xs, g, lo, hi);  // which zero
    float s, l;
    if (!write_group_header(lo, hi, out, s, l)) return false;
    if (s > 0.0f) {
      group_codes(xs, g, l, s, codes);
    } else {
      std::fill(codes, codes + g, 0u);
    }
    // Byte j: the codes of values j, j+q, j+2q, j+3q in bits 0-1 .. 6-7.
    uint8_t* packed = out + 4;
    for (int j = 0; j < q; j += 4) {
      uint32x4_t b = vld1q_u32(codes + j);
      b = vorrq_u32(b, vshlq_n_u32(vld1q_u32(codes + j + q), 2));
      b = vorrq_u32(b, vshlq_n_u32(vld1q_u32(codes + j + 2 * q), 4));
      b = vorrq_u32(b, vshlq_n_u32(vld1q_u32(codes + j + 3 * q), 6));
      const uint8x8_t bytes = vmovn_u16(vcombine_u16(vmovn_u32(b), vdup_n_u16(0)));
      vst1_lane_u32(reinterpret_cast<uint32_t*>(packed + j), vreinterpret_u32_u8(bytes), 0);
    }
    out += 4 + q;
  }
  return true;
}

}  // namespace oscar::kv::detail
