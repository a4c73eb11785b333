// The row kernels (row_kernels_simd.h) for AArch64 Advanced SIMD (NEON),
// part of every ARMv8 CPU: 4 floats per 128-bit vector. AArch64 has 32
// vector registers, as AVX-512 has, so a call takes up to 8 query heads (4
// rows x 4 heads of score accumulators). f16 rows convert with fcvtl (base
// ARMv8, no FP16 arithmetic needed), and the q2 score kernel looks each
// 2-bit code up in the group's table {lo, lo+s, lo+2s, lo+3s} with one tbl.
#include "attention/row_kernels_simd.h"

#include <arm_neon.h>

namespace oscar::attention::detail {
namespace {

struct Vec4Neon {
  using F = float32x4_t;
  using I = uint32x4_t;
  static constexpr int W = 4;
  static F zero() { return vdupq_n_f32(0.0f); }
  static F load(const float* p) { return vld1q_f32(p); }
  static void store(float* p, F x) { vst1q_f32(p, x); }
  static F set1(float f) { return vdupq_n_f32(f); }
  static F bcast(const float* p) { return vld1q_dup_f32(p); }
  static F fma(F a, F b, F c) { return vfmaq_f32(c, a, b); }
  static F add(F a, F b) { return vaddq_f32(a, b); }
  static F sub(F a, F b) { return vsubq_f32(a, b); }
  static F mul(F a, F b) { return vmulq_f32(a, b); }
  static F max(F a, F b) { return vmaxq_f32(a, b); }
  static F fnma(F a, F b, F c) { return vfmsq_f32(c, a, b); }  // c - a * b
  static F round(F x) { return vrndnq_f32(x); }                // to nearest, ties to even
  // y * 2^n (n integral, in the normal exponent range) where x >= lo, else
  // (and where x is NaN: the compare is false) 0.
  static F times_pow2_where(F y, F n, F x, float lo) {
    const int32x4_t e = vshlq_n_s32(vaddq_s32(vcvtnq_s32_f32(n), vdupq_n_s32(127)), 23);
    const F scaled = vmulq_f32(y, vreinterpretq_f32_s32(e));
    return vreinterpretq_f32_u32(vandq_u32(vcgeq_f32(x, vdupq_n_f32(lo)), vreinterpretq_u32_f32(scaled)));
  }
  static float hsum(F v) { return vaddvq_f32(v); }
  static float hmax(F v) { return vmaxvq_f32(v); }
  // Eight lane sums by pairwise adds: 6 faddp for 8 sums.
  static void sums8(const F* v, float* out) {
    vst1q_f32(out, vpaddq_f32(vpaddq_f32(v[0], v[1]), vpaddq_f32(v[2], v[3])));
    vst1q_f32(out + 4, vpaddq_f32(vpaddq_f32(v[4], v[5]), vpaddq_f32(v[6], v[7])));
  }
  static F f16(const uint8_t* p) { return vcvt_f32_f16(vreinterpret_f16_u8(vld1_u8(p))); }
  // Four code bytes as 32-bit lanes.
  static I widen(const uint8_t* p) {
    uint32_t w;
    std::memcpy(&w, p, 4);
    return vmovl_u16(vget_low_u16(vmovl_u8(vreinterpret_u8_u32(vdup_n_u32(w)))));
  }
  static F quarters(float s, float lo) {
    static const float kSteps[4] = {0, 1, 2, 3};
    return vfmaq_n_f32(vdupq_n_f32(lo), vld1q_f32(kSteps), s);
  }
  // Field k of each lane looked up in t (4 floats): the byte indices of
  // entry c are 4c .. 4c+3.
  static F pick(I c, int k, F t) {
    const uint32x4_t idx = vandq_u32(vshlq_u32(c, vdupq_n_s32(-2 * k)), vdupq_n_u32(3));
    const uint32x4_t bytes = vmlaq_n_u32(vdupq_n_u32(0x03020100u), idx, 0x04040404u);
    return vreinterpretq_f32_u8(vqtbl1q_u8(vreinterpretq_u8_f32(t), vreinterpretq_u8_u32(bytes)));
  }
  static F field(I c, int k) {
    return vcvtq_f32_u32(vandq_u32(vshlq_u32(c, vdupq_n_s32(-2 * k)), vdupq_n_u32(3)));
  }
};

}  // namespace

RowKernels neon_row_kernels() { return simd_kernels<Vec4Neon, 8>(); }

}  // namespace oscar::attention::detail
