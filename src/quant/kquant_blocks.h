// Block layouts of the ggml k-quant formats (super-blocks of QK_K = 256
// values), byte for byte as they appear in GGUF files (little-endian, no
// padding), the Q8_K activation format, and the entry points of the per-ISA
// dot kernels.
//
//   Q2_K ( 84 B): scales[16] (lo nibble: scale, hi nibble: min), qs[64]
//                 (2-bit), f16 d, f16 dmin.
//                 x = d * sc * q - dmin * m, 16 sub-blocks of 16 values.
//   Q3_K (110 B): hmask[32], qs[64] (low 2 bits), scales[12] (16 x 6-bit,
//                 stored biased by 32), f16 d.
//                 x = d * (sc - 32) * (q2 + 4 * hbit - 4), 16 sub-blocks of 16.
//   Q4_K (144 B): f16 d, f16 dmin, scales[12] (8 x 6-bit scale, 8 x 6-bit min),
//                 qs[128] (nibbles). x = d * sc * q - dmin * m, 8 sub-blocks of 32.
//   Q5_K (176 B): as Q4_K plus qh[32] (fifth bits) before qs[128].
//   Q6_K (210 B): ql[128] (low nibbles), qh[64] (high 2 bits), int8 scales[16],
//                 f16 d. x = d * sc * (q - 32), 16 sub-blocks of 16.
//   Q8_K (292 B): f32 d, int8 qs[256], int16 bsums[16] (sums of 16 qs each).
//                 The AVX-512 Q4_K / Q5_K kernels take it in the paired order
//                 (pair_q8_K_chunks): qs chunks of 32 in the order
//                 0, 2, 1, 3, 4, 6, 5, 7, bsums unchanged.
//
// Where value i of a super-block lives (i = 128 * h + 32 * j + l, l < 32):
//   Q2_K / Q3_K: bits 2j..2j+1 of qs[32h + l]; Q3_K's high bit is bit 4h + j
//                of hmask[l]; sub-block (scale index) i / 16.
//   Q4_K / Q5_K: i = 64 * c + 32 * k + l: nibble k (0 low, 1 high) of
//                qs[32c + l], sub-block 2c + k; Q5_K's fifth bit is bit 2c + k
//                of qh[l].
//   Q6_K:        i = 128 * h + 32 * j + l: the low nibble of ql[64h + l] (j=0),
//                ql[64h + 32 + l] (j=1), the high nibbles of the same (j=2, 3);
//                the high 2 bits are bits 2j..2j+1 of qh[32h + l]; sub-block i/16.
// Q4_K / Q5_K 6-bit scale packing (bytes b[0..11]): for j < 4 scale j is
// b[j] & 63 and min j is b[j+4] & 63; for j >= 4 scale j is
// (b[j+4] & 15) | (b[j-4] >> 6) << 4 and min j is (b[j+4] >> 4) | (b[j] >> 6) << 4.
// Q3_K 6-bit scale packing: scale j has its low 4 bits in b[j] (j < 8, low
// nibble) or b[j-8] (j >= 8, high nibble) and its high 2 bits at bits
// 2*(j/4)..2*(j/4)+1 of b[8 + j%4].
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstring>

#include "quant/quant.h"

namespace oscar::quant {

constexpr int kQK_K = 256;

struct BlockQ2_K {
  uint8_t scales[16];
  uint8_t qs[64];
  uint16_t d, dmin;
};
struct BlockQ3_K {
  uint8_t hmask[32];
  uint8_t qs[64];
  uint8_t scales[12];
  uint16_t d;
};
struct BlockQ4_K {
  uint16_t d, dmin;
  uint8_t scales[12];
  uint8_t qs[128];
};
struct BlockQ5_K {
  uint16_t d, dmin;
  uint8_t scales[12];
  uint8_t qh[32];
  uint8_t qs[128];
};
struct BlockQ6_K {
  uint8_t ql[128];
  uint8_t qh[64];
  int8_t scales[16];
  uint16_t d;
};
struct BlockQ8_K {
  float d;
  int8_t qs[256];
  int16_t bsums[16];
};
static_assert(sizeof(BlockQ2_K) == 84);
static_assert(sizeof(BlockQ3_K) == 110);
static_assert(sizeof(BlockQ4_K) == 144);
static_assert(sizeof(BlockQ5_K) == 176);
static_assert(sizeof(BlockQ6_K) == 210);
static_assert(sizeof(BlockQ8_K) == 292);

// The helpers below are `static` on purpose: this header is also compiled
// with AVX2 / AVX-512 flags, and an out-of-line copy of an ordinary inline
// function built with those flags could be picked by the linker for the
// scalar callers too.
static inline uint32_t kq_load_u32(const uint8_t* p) {
  uint32_t v;
  std::memcpy(&v, p, 4);
  return v;
}

// Unpacks the Q4_K/Q5_K 12-byte field four bytes at a time into
// w = {scales 0..3, scales 4..7, mins 0..3, mins 4..7} (one 6-bit value per
// byte): bytes 0..3 hold scales 0..3 (+ top bits of scales 4..7), bytes 4..7
// mins 0..3 (+ top bits of mins 4..7), bytes 8..11 the low nibbles of scales
// 4..7 (low half) and mins 4..7 (high half). The scalar kernels' unpack; the
// SIMD kernels do the same in vector registers (kquant_simd_fields.h).
static inline void kq_scale_words_k4(const uint8_t* b, uint32_t w[4]) {
  const uint32_t a0 = kq_load_u32(b), a1 = kq_load_u32(b + 4), a2 = kq_load_u32(b + 8);
  w[0] = a0 & 0x3f3f3f3fu;
  w[1] = (a2 & 0x0f0f0f0fu) | ((a0 >> 2) & 0x30303030u);
  w[2] = a1 & 0x3f3f3f3fu;
  w[3] = ((a2 >> 4) & 0x0f0f0f0fu) | ((a1 >> 2) & 0x30303030u);
}

static inline void kq_unpack_scales_k4(const uint8_t* b, uint8_t sc[8], uint8_t mn[8]) {
  uint32_t w[4];
  kq_scale_words_k4(b, w);
  std::memcpy(sc, w, 8);
  std::memcpy(mn, w + 2, 8);
}

// Unpacks the Q3_K 12-byte field into its 16 6-bit scales, still biased by
// 32 (0..63), one per byte.
static inline void kq_scale_words_q3(const uint8_t* b, uint32_t w[4]) {
  const uint32_t a0 = kq_load_u32(b), a1 = kq_load_u32(b + 4), a2 = kq_load_u32(b + 8);
  w[0] = (a0 & 0x0f0f0f0fu) | ((a2 << 4) & 0x30303030u);
  w[1] = (a1 & 0x0f0f0f0fu) | ((a2 << 2) & 0x30303030u);
  w[2] = ((a0 >> 4) & 0x0f0f0f0fu) | (a2 & 0x30303030u);
  w[3] = ((a1 >> 4) & 0x0f0f0f0fu) | ((a2 >> 2) & 0x30303030u);
}

// The 16 signed Q3_K scales (-32..31).
static inline void kq_unpack_scales_q3(const uint8_t* b, int8_t sc[16]) {
  uint32_t w[4];
  kq_scale_words_q3(b, w);
  uint8_t u[16];
  std::memcpy(u, w, 16);
  for (int j = 0; j < 16; ++j) sc[j] = (int8_t)(u[j] - 32);
}

// Every k-quant super-block can be written as
//   x_i = d * s[i/16] * u_i - m * t[i/16]
// with u_i an unsigned integer (< 64), s / t small integers per 16 values, so
//   dot(x, Q8_K a) = a.d * (d * sum_g s_g sum_i u_i a_i - m * sum_g t_g bsum_g).
// The mins (Q2/Q4/Q5) or the constant offsets (Q3: 4 * s, Q6: 32 * s) are
// thereby applied through Q8_K's bsums, leaving one unsigned x signed int8
// product per value. All dot kernels (scalar and SIMD) use this form.
struct KqDecoded {
  alignas(64) uint8_t u[256];
  int16_t s[16];
  int16_t t[16];
  float d, m;
};

// Entry points of the SIMD dot kernels (DotTileFn), per ISA.
// The SIMD dot kernels of one ISA by type.
struct KQuantDots {
  DotTileFn q2_K, q3_K, q4_K, q5_K, q6_K;
};
#if defined(__aarch64__)
// AArch64 (kquant_dot_neon*.cpp): plain NEON, and with sdot (needs cpu.arm_dotprod).
KQuantDots kquant_dots_neon();
KQuantDots kquant_dots_neondot();
#endif
#if defined(OSCAR_X86)
void dot_q2_K_avx2(int64_t, const void*, size_t, int, const void*, size_t, int, float*, size_t);
void dot_q3_K_avx2(int64_t, const void*, size_t, int, const void*, size_t, int, float*, size_t);
void dot_q4_K_avx2(int64_t, const void*, size_t, int, const void*, size_t, int, float*, size_t);
void dot_q5_K_avx2(int64_t, const void*, size_t, int, const void*, size_t, int, float*, size_t);
void dot_q6_K_avx2(int64_t, const void*, size_t, int, const void*, size_t, int, float*, size_t);
void quantize_q8_K_avx2(const float* src, void* dst, int64_t n);
// The AVX-512 kernels by type, built twice from kquant_dot_avx512_impl.h:
// plain (F/BW/VL/DQ) and with VNNI.
KQuantDots kquant_dots_avx512();
KQuantDots kquant_dots_avx512vnni();
#endif

// Scalar pieces shared by the table and the tests.
void kq_decode_q2_K(const BlockQ2_K& b, KqDecoded& o);
void kq_decode_q3_K(const BlockQ3_K& b, KqDecoded& o);
void kq_decode_q4_K(const BlockQ4_K& b, KqDecoded& o);
void kq_decode_q5_K(const BlockQ5_K& b, KqDecoded& o);
void kq_decode_q6_K(const BlockQ6_K& b, KqDecoded& o);

void dequantize_q2_K(const void* src, float* dst, int64_t n);
void dequantize_q3_K(const void* src, float* dst, int64_t n);
void dequantize_q4_K(const void* src, float* dst, int64_t n);
void dequantize_q5_K(const void* src, float* dst, int64_t n);
void dequantize_q6_K(const void* src, float* dst, int64_t n);
void dequantize_q8_K(const void* src, float* dst, int64_t n);

void quantize_q2_K(const float* src, void* dst, int64_t n);
void quantize_q3_K(const float* src, void* dst, int64_t n);
void quantize_q4_K(const float* src, void* dst, int64_t n);
void quantize_q5_K(const float* src, void* dst, int64_t n);
void quantize_q6_K(const float* src, void* dst, int64_t n);
void quantize_q8_K(const float* src, void* dst, int64_t n);
// Swaps the 32-byte qs chunks 1 <-> 2 and 5 <-> 6 of every block of a Q8_K
// row of n values, in place: natural order <-> the paired order of the
// AVX-512 Q4_K / Q5_K kernels (its own inverse).
void pair_q8_K_chunks(void* row, int64_t n);

void dot_q2_K_ref(int64_t, const void*, size_t, int, const void*, size_t, int, float*, size_t);
void dot_q3_K_ref(int64_t, const void*, size_t, int, const void*, size_t, int, float*, size_t);
void dot_q4_K_ref(int64_t, const void*, size_t, int, const void*, size_t, int, float*, size_t);
void dot_q5_K_ref(int64_t, const void*, size_t, int, const void*, size_t, int, float*, size_t);
void dot_q6_K_ref(int64_t, const void*, size_t, int, const void*, size_t, int, float*, size_t);
// The scalar references on activations in the paired order.
void dot_q4_K_paired_ref(int64_t, const void*, size_t, int, const void*, size_t, int, float*, size_t);
void dot_q5_K_paired_ref(int64_t, const void*, size_t, int, const void*, size_t, int, float*, size_t);

}  // namespace oscar::quant
