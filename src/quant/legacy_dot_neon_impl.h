// The Q8_0 dot tile for AArch64, written once over the integer product of a
// block and compiled twice: with plain NEON (legacy_dot_neon.cpp: smull +
// sadalp, any ARMv8 CPU) and with the dot-product extension
// (legacy_dot_neondot.cpp: sdot, ARMv8.2+). Include only inside an anonymous
// namespace of those files, after <arm_neon.h> and a definition of
//   int32x4_t block_dot(int32x4_t acc, const int8_t* w, const int8_t* a)
// (acc + the 32 products of a block, in 4 int32 lanes).
//
// Per (row, column): for each block the integer dot is exact, then
// sum += float(isum lanes) * (dw * da), as the scalar twin (dot_ref in
// legacy_types.cpp) does in double. Rows are taken two at a time so each
// activation block loaded feeds two weight rows.

inline float f16_le(const uint8_t* p) {
  __fp16 h;  // AArch64 converts half to single in its base ISA
  std::memcpy(&h, p, 2);
  return (float)h;
}

inline void q8_0_tile(int64_t n, const void* w, size_t w_stride, int nr, const void* act, size_t act_stride, int nc,
                      float* out, size_t out_stride) {
  constexpr size_t kB = 34;  // bytes per Q8_0 block: f16 d, 32 x int8
  const int64_t nb = n / 32;
  const auto* wb = static_cast<const uint8_t*>(w);
  const auto* ab = static_cast<const uint8_t*>(act);
  for (int c = 0; c < nc; ++c) {
    const uint8_t* a = ab + (size_t)c * act_stride;
    int r = 0;
    for (; r + 2 <= nr; r += 2) {
      const uint8_t* w0 = wb + (size_t)r * w_stride;
      const uint8_t* w1 = w0 + w_stride;
      float32x4_t s0 = vdupq_n_f32(0.0f), s1 = vdupq_n_f32(0.0f);
      for (int64_t b = 0; b < nb; ++b) {
        const uint8_t* ap = a + b * kB;
        const int8_t* aq = reinterpret_cast<const int8_t*>(ap + 2);
        const int32x4_t p0 = block_dot(vdupq_n_s32(0), reinterpret_cast<const int8_t*>(w0 + b * kB + 2), aq);
        const int32x4_t p1 = block_dot(vdupq_n_s32(0), reinterpret_cast<const int8_t*>(w1 + b * kB + 2), aq);
        const float da = f16_le(ap);
        s0 = vfmaq_n_f32(s0, vcvtq_f32_s32(p0), f16_le(w0 + b * kB) * da);
        s1 = vfmaq_n_f32(s1, vcvtq_f32_s32(p1), f16_le(w1 + b * kB) * da);
      }
      out[(size_t)r * out_stride + c] = vaddvq_f32(s0);
      out[(size_t)(r + 1) * out_stride + c] = vaddvq_f32(s1);
    }
    if (r < nr) {
      const uint8_t* w0 = wb + (size_t)r * w_stride;
      float32x4_t s0 = vdupq_n_f32(0.0f);
      for (int64_t b = 0; b < nb; ++b) {
        const uint8_t* ap = a + b * kB;
        const int32x4_t p0 = block_dot(vdupq_n_s32(0), reinterpret_cast<const int8_t*>(w0 + b * kB + 2),
                                       reinterpret_cast<const int8_t*>(ap + 2));
        s0 = vfmaq_n_f32(s0, vcvtq_f32_s32(p0), f16_le(w0 + b * kB) * f16_le(ap));
      }
      out[(size_t)r * out_stride + c] = vaddvq_f32(s0);
    }
  }
}
