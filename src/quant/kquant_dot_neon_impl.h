// The k-quant dot tiles for AArch64 (Q2_K .. Q6_K against Q8_K
// activations), written once over the integer product of 16 values and
// compiled twice: plain NEON (kquant_dot_neon.cpp: smull + sadalp) and with
// the dot-product extension (kquant_dot_neondot.cpp: sdot). Include only
// inside an anonymous namespace of those files, after <arm_neon.h> and
//   int32x4_t group_dot(const uint8_t* u, const int8_t* a)
// (the 16 products u[i] * a[i], u < 128, summed into 4 int32 lanes).
//
// Each weight super-block is unpacked once (kq_decode_*, the scalar twin's
// own decoder, which GCC vectorises) into codes u, per-16 scales s and
// offsets t, and reused for every activation column of the tile; the
// integer sums are exact and the float update is the scalar twin's
// (dot_ref_tile in kquant_types.cpp), so results are bit for bit the same.

template <class Block, void (*Decode)(const Block&, KqDecoded&)>
void kq_tile(int64_t n, const void* w, size_t w_stride, int nr, const void* act, size_t act_stride, int nc,
             float* out, size_t out_stride) {
  const int64_t nb = n / kQK_K;
  KqDecoded dec;
  for (int r = 0; r < nr; ++r) {
    const auto* wr = reinterpret_cast<const Block*>(static_cast<const uint8_t*>(w) + r * w_stride);
    float acc[kMaxTile] = {};
    for (int64_t ib = 0; ib < nb; ++ib) {
      Decode(wr[ib], dec);
      const int16x8_t t0 = vld1q_s16(dec.t), t1 = vld1q_s16(dec.t + 8);
      for (int c = 0; c < nc; ++c) {
        const auto& a = reinterpret_cast<const BlockQ8_K*>(static_cast<const uint8_t*>(act) + c * act_stride)[ib];
        int32x4_t sv = vdupq_n_s32(0);
        #pragma GCC unroll 16
        for (int g = 0; g < 16; ++g) sv = vmlaq_n_s32(sv, group_dot(dec.u + 16 * g, a.qs + 16 * g), dec.s[g]);
        const int16x8_t b0 = vld1q_s16(a.bsums), b1 = vld1q_s16(a.bsums + 8);
        int32x4_t bv = vmull_s16(vget_low_s16(b0), vget_low_s16(t0));
        bv = vmlal_high_s16(bv, b0, t0);
        bv = vmlal_s16(bv, vget_low_s16(b1), vget_low_s16(t1));
        bv = vmlal_high_s16(bv, b1, t1);
        const int32_t sum = vaddvq_s32(sv), bias = vaddvq_s32(bv);
        acc[c] += a.d * (dec.d * (float)sum - dec.m * (float)bias);
      }
    }
    for (int c = 0; c < nc; ++c) out[r * out_stride + c] = acc[c];
  }
}

KQuantDots kquant_dots() {
  return {kq_tile<BlockQ2_K, kq_decode_q2_K>, kq_tile<BlockQ3_K, kq_decode_q3_K>, kq_tile<BlockQ4_K, kq_decode_q4_K>,
          kq_tile<BlockQ5_K, kq_decode_q5_K>, kq_tile<BlockQ6_K, kq_decode_q6_K>};
}
