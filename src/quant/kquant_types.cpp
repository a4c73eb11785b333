// k-quant family (Q2_K..Q6_K): scalar reference decoders, the scalar dot
// kernels and the table rows with run-time kernel selection. The quantizers
// live in kquant_quantize.cpp, the SIMD kernels in kquant_dot_*.cpp.
#include <cmath>

#include "core/fp16.h"
#include "quant/kquant_blocks.h"

namespace oscar::quant {

// ---------------------------------------------------------------------------
// Dequantizers. Written value by value from the layout so they double as the
// layout documentation; the arithmetic order (scale products first) follows
// ggml's so the floats match it bit for bit.

void dequantize_q2_K(const void* src, float* dst, int64_t n) {
  const auto* b = static_cast<const BlockQ2_K*>(src);
  for (int64_t ib = 0; ib < n / kQK_K; ++ib, ++b) {
    const float d = fp16_to_f32(b->d), dmin = fp16_to_f32(b->dmin);
    for (int i = 0; i < 256; ++i) {
      const int h = i / 128, j = (i % 128) / 32, l = i % 32;
      const uint8_t sc = b->scales[i / 16];
      const float dl = d * (float)(sc & 15), ml = dmin * (float)(sc >> 4);
      *dst++ = dl * (float)((b->qs[32 * h + l] >> (2 * j)) & 3) - ml;
    }
  }
}

void dequantize_q3_K(const void* src, float* dst, int64_t n) {
  const auto* b = static_cast<const BlockQ3_K*>(src);
  for (int64_t ib = 0; ib < n / kQK_K; ++ib, ++b) {
    const float d = fp16_to_f32(b->d);
    int8_t sc[16];
    kq_unpack_scales_q3(b->scales, sc);
    for (int i = 0; i < 256; ++i) {
      const int h = i / 128, j = (i % 128) / 32, l = i % 32;
      const int q2 = (b->qs[32 * h + l] >> (2 * j)) & 3;
      const bool hi = (b->hmask[l] >> (4 * h + j)) & 1;
      const float dl = d * (float)sc[i / 16];
      *dst++ = dl * (float)(q2 - (hi ? 0 : 4));
    }
  }
}

void dequantize_q4_K(const void* src, float* dst, int64_t n) {
  const auto* b = static_cast<const BlockQ4_K*>(src);
  for (int64_t ib = 0; ib < n / kQK_K; ++ib, ++b) {
    const float d = fp16_to_f32(b->d), dmin = fp16_to_f32(b->dmin);
    uint8_t sc[8], mn[8];
    kq_unpack_scales_k4(b->scales, sc, mn);
    for (int i = 0; i < 256; ++i) {
      const int c = i / 64, k = (i % 64) / 32, l = i % 32;
      const int q = (b->qs[32 * c + l] >> (4 * k)) & 15;
      const float d1 = d * (float)sc[2 * c + k], m1 = dmin * (float)mn[2 * c + k];
      *dst++ = d1 * (float)q - m1;
    }
  }
}

void dequantize_q5_K(const void* src, float* dst, int64_t n) {
  const auto* b = static_cast<const BlockQ5_K*>(src);
  for (int64_t ib = 0; ib < n / kQK_K; ++ib, ++b) {
    const float d = fp16_to_f32(b->d), dmin = fp16_to_f32(b->dmin);
    uint8_t sc[8], mn[8];
    kq_unpack_scales_k4(b->scales, sc, mn);
    for (int i = 0; i < 256; ++i) {
      const int c = i / 64, k = (i % 64) / 32, l = i % 32;
      const int q = ((b->qs[32 * c + l] >> (4 * k)) & 15) | (((b->qh[l] >> (2 * c + k)) & 1) << 4);
      const float d1 = d * (float)sc[2 * c + k], m1 = dmin * (float)mn[2 * c + k];
      *dst++ = d1 * (float)q - m1;
    }
  }
}

void dequantize_q6_K(const void* src, float* dst, int64_t n) {
  const auto* b = static_cast<const BlockQ6_K*>(src);
  for (int64_t ib = 0; ib < n / kQK_K; ++ib, ++b) {
    const float d = fp16_to_f32(b->d);
    for (int i = 0; i < 256; ++i) {
      const int h = i / 128, j = (i % 128) / 32, l = i % 32;
      const uint8_t lb = b->ql[64 * h + 32 * (j & 1) + l];
      const int lo = (j < 2) ? (lb & 15) : (lb >> 4);
      const int hi = (b->qh[32 * h + l] >> (2 * j)) & 3;
      *dst++ = d * (float)b->scales[i / 16] * (float)((lo | (hi << 4)) - 32);
    }
  }
}

void dequantize_q8_K(const void* src, float* dst, int64_t n) {
  const auto* b = static_cast<const BlockQ8_K*>(src);
  for (int64_t ib = 0; ib < n / kQK_K; ++ib, ++b)
    for (int i = 0; i < 256; ++i) *dst++ = b->d * (float)b->qs[i];
}

// ---------------------------------------------------------------------------
// Decoding into the common (u, s, t, d, m) form of kquant_blocks.h.

// The loops run over (half, part, lane) rather than the value index so the
// compiler can vectorize them (this is the ARM64 fallback path).

void kq_decode_q2_K(const BlockQ2_K& b, KqDecoded& o) {
  for (int h = 0; h < 2; ++h)
    for (int j = 0; j < 4; ++j)
      for (int l = 0; l < 32; ++l) o.u[128 * h + 32 * j + l] = (b.qs[32 * h + l] >> (2 * j)) & 3;
  for (int g = 0; g < 16; ++g) {
    o.s[g] = b.scales[g] & 15;
    o.t[g] = b.scales[g] >> 4;
  }
  o.d = fp16_to_f32(b.d);
  o.m = fp16_to_f32(b.dmin);
}

void kq_decode_q3_K(const BlockQ3_K& b, KqDecoded& o) {
  for (int h = 0; h < 2; ++h)
    for (int j = 0; j < 4; ++j)
      for (int l = 0; l < 32; ++l)
        o.u[128 * h + 32 * j + l] = (uint8_t)(((b.qs[32 * h + l] >> (2 * j)) & 3) |
                                              (((b.hmask[l] >> (4 * h + j)) & 1) << 2));
  int8_t sc[16];
  kq_unpack_scales_q3(b.scales, sc);
  for (int g = 0; g < 16; ++g) {
    o.s[g] = sc[g];
    o.t[g] = (int16_t)(4 * sc[g]);  // value = u - 4
  }
  o.d = o.m = fp16_to_f32(b.d);
}

void kq_decode_q4_K(const BlockQ4_K& b, KqDecoded& o) {
  for (int c = 0; c < 4; ++c)
    for (int l = 0; l < 32; ++l) {
      o.u[64 * c + l] = b.qs[32 * c + l] & 15;
      o.u[64 * c + 32 + l] = b.qs[32 * c + l] >> 4;
    }
  uint8_t sc[8], mn[8];
  kq_unpack_scales_k4(b.scales, sc, mn);
  for (int g = 0; g < 16; ++g) {
    o.s[g] = sc[g / 2];
    o.t[g] = mn[g / 2];
  }
  o.d = fp16_to_f32(b.d);
  o.m = fp16_to_f32(b.dmin);
}

void kq_decode_q5_K(const BlockQ5_K& b, KqDecoded& o) {
  for (int c = 0; c < 4; ++c)
    for (int l = 0; l < 32; ++l) {
      o.u[64 * c + l] = (uint8_t)((b.qs[32 * c + l] & 15) | (((b.qh[l] >> (2 * c)) & 1) << 4));
      o.u[64 * c + 32 + l] = (uint8_t)((b.qs[32 * c + l] >> 4) | (((b.qh[l] >> (2 * c + 1)) & 1) << 4));
    }
  uint8_t sc[8], mn[8];
  kq_unpack_scales_k4(b.scales, sc, mn);
  for (int g = 0; g < 16; ++g) {
    o.s[g] = sc[g / 2];
    o.t[g] = mn[g / 2];
  }
  o.d = fp16_to_f32(b.d);
  o.m = fp16_to_f32(b.dmin);
}

void kq_decode_q6_K(const BlockQ6_K& b, KqDecoded& o) {
  for (int h = 0; h < 2; ++h)
    for (int l = 0; l < 32; ++l) {
      const uint8_t l0 = b.ql[64 * h + l], l1 = b.ql[64 * h + 32 + l], hb = b.qh[32 * h + l];
      uint8_t* u = o.u + 128 * h + l;
      u[0] = (uint8_t)((l0 & 15) | ((hb & 3) << 4));
      u[32] = (uint8_t)((l1 & 15) | (((hb >> 2) & 3) << 4));
      u[64] = (uint8_t)((l0 >> 4) | (((hb >> 4) & 3) << 4));
      u[96] = (uint8_t)((l1 >> 4) | (((hb >> 6) & 3) << 4));
    }
  for (int g = 0; g < 16; ++g) {
    o.s[g] = b.scales[g];
    o.t[g] = (int16_t)(32 * b.scales[g]);  // value = u - 32
  }
  o.d = o.m = fp16_to_f32(b.d);
}

// ---------------------------------------------------------------------------
// Scalar dot kernels: exact integer sums per super-block, one float update.

namespace {

// Where natural activation value i sits in a paired Q8_K block
// (pair_q8_K_chunks): chunks of 32 in the order 0, 2, 1, 3, 4, 6, 5, 7.
constexpr int paired_index(int i) {
  const int c = i / 32;
  return 32 * ((c % 4 == 1 || c % 4 == 2) ? c ^ 3 : c) + i % 32;
}
static_assert(paired_index(32) == 64 && paired_index(64) == 32 && paired_index(200) == 168);

template <class Block, void (*Decode)(const Block&, KqDecoded&), bool kPaired = false>
void dot_ref_tile(int64_t n, const void* w, size_t w_stride, int nr, const void* act,
                  size_t act_stride, int nc, float* out, size_t out_stride) {
  const int64_t nb = n / kQK_K;
  KqDecoded dec;
  for (int r = 0; r < nr; ++r) {
    const auto* wr = reinterpret_cast<const Block*>(static_cast<const uint8_t*>(w) + r * w_stride);
    float acc[kMaxTile] = {};
    for (int64_t ib = 0; ib < nb; ++ib) {
      Decode(wr[ib], dec);
      for (int c = 0; c < nc; ++c) {
        const auto& a = reinterpret_cast<const BlockQ8_K*>(static_cast<const uint8_t*>(act) +
                                                           c * act_stride)[ib];
        int32_t sum = 0, bias = 0;
        for (int g = 0; g < 16; ++g) {
          int32_t sg = 0;
          for (int i = 0; i < 16; ++i) {
            const int k = 16 * g + i;
            sg += (int16_t)dec.u[k] * (int16_t)a.qs[kPaired ? paired_index(k) : k];
          }
          sum += dec.s[g] * sg;
          bias += dec.t[g] * a.bsums[g];
        }
        acc[c] += a.d * (dec.d * (float)sum - dec.m * (float)bias);
      }
    }
    for (int c = 0; c < nc; ++c) out[r * out_stride + c] = acc[c];
  }
}

}  // namespace

void dot_q2_K_ref(int64_t n, const void* w, size_t ws, int nr, const void* a, size_t as, int nc,
                  float* o, size_t os) {
  dot_ref_tile<BlockQ2_K, kq_decode_q2_K>(n, w, ws, nr, a, as, nc, o, os);
}
void dot_q3_K_ref(int64_t n, const void* w, size_t ws, int nr, const void* a, size_t as, int nc,
                  float* o, size_t os) {
  dot_ref_tile<BlockQ3_K, kq_decode_q3_K>(n, w, ws, nr, a, as, nc, o, os);
}
void dot_q4_K_ref(int64_t n, const void* w, size_t ws, int nr, const void* a, size_t as, int nc,
                  float* o, size_t os) {
  dot_ref_tile<BlockQ4_K, kq_decode_q4_K>(n, w, ws, nr, a, as, nc, o, os);
}
void dot_q5_K_ref(int64_t n, const void* w, size_t ws, int nr, const void* a, size_t as, int nc,
                  float* o, size_t os) {
  dot_ref_tile<BlockQ5_K, kq_decode_q5_K>(n, w, ws, nr, a, as, nc, o, os);
}
void dot_q6_K_ref(int64_t n, const void* w, size_t ws, int nr, const void* a, size_t as, int nc,
                  float* o, size_t os) {
  dot_ref_tile<BlockQ6_K, kq_decode_q6_K>(n, w, ws, nr, a, as, nc, o, os);
}
void dot_q4_K_paired_ref(int64_t n, const void* w, size_t ws, int nr, const void* a, size_t as, int nc,
                         float* o, size_t os) {
  dot_ref_tile<BlockQ4_K, kq_decode_q4_K, true>(n, w, ws, nr, a, as, nc, o, os);
}
void dot_q5_K_paired_ref(int64_t n, const void* w, size_t ws, int nr, const void* a, size_t as, int nc,
                         float* o, size_t os) {
  dot_ref_tile<BlockQ5_K, kq_decode_q5_K, true>(n, w, ws, nr, a, as, nc, o, os);
}

// ---------------------------------------------------------------------------
// Table rows.

namespace {

struct KqKernels {
  TensorType type;
  DequantizeRowFn deq;
  QuantizeRowFn quant;
  DotTileFn ref, avx2, avx512, avx512vnni;
  DotTileFn paired_ref;  // set where the AVX-512 kernels take paired activations
};

#if defined(OSCAR_X86)
// Q8_K in the paired order (the AVX-512 Q4_K / Q5_K kernels). Only chosen on
// CPUs with AVX-512, which all have the AVX2 encoder's instructions.
void quantize_q8_K_paired_avx2(const float* src, void* dst, int64_t n) {
  quantize_q8_K_avx2(src, dst, n);
  pair_q8_K_chunks(dst, n);
}
#endif

}  // namespace

void register_kquant_types(QuantTraits* table, bool* present, const CpuFeatures& cpu) {
#if defined(OSCAR_X86)
  const KQuantDots a5 = kquant_dots_avx512(), vn = kquant_dots_avx512vnni();
  const KqKernels rows[] = {
      {TensorType::Q2_K, dequantize_q2_K, quantize_q2_K, dot_q2_K_ref, dot_q2_K_avx2, a5.q2_K, vn.q2_K, nullptr},
      {TensorType::Q3_K, dequantize_q3_K, quantize_q3_K, dot_q3_K_ref, dot_q3_K_avx2, a5.q3_K, vn.q3_K, nullptr},
      {TensorType::Q4_K, dequantize_q4_K, quantize_q4_K, dot_q4_K_ref, dot_q4_K_avx2, a5.q4_K, vn.q4_K,
       dot_q4_K_paired_ref},
      {TensorType::Q5_K, dequantize_q5_K, quantize_q5_K, dot_q5_K_ref, dot_q5_K_avx2, a5.q5_K, vn.q5_K,
       dot_q5_K_paired_ref},
      {TensorType::Q6_K, dequantize_q6_K, quantize_q6_K, dot_q6_K_ref, dot_q6_K_avx2, a5.q6_K, vn.q6_K, nullptr},
  };
#else
  const KqKernels rows[] = {
      {TensorType::Q2_K, dequantize_q2_K, quantize_q2_K, dot_q2_K_ref, nullptr, nullptr, nullptr, nullptr},
      {TensorType::Q3_K, dequantize_q3_K, quantize_q3_K, dot_q3_K_ref, nullptr, nullptr, nullptr, nullptr},
      {TensorType::Q4_K, dequantize_q4_K, quantize_q4_K, dot_q4_K_ref, nullptr, nullptr, nullptr, nullptr},
      {TensorType::Q5_K, dequantize_q5_K, quantize_q5_K, dot_q5_K_ref, nullptr, nullptr, nullptr, nullptr},
      {TensorType::Q6_K, dequantize_q6_K, quantize_q6_K, dot_q6_K_ref, nullptr, nullptr, nullptr, nullptr},
  };
#endif
  for (const KqKernels& k : rows) {
    QuantTraits& t = table[(uint32_t)k.type];
    t.type = k.type;
    t.act_type = TensorType::Q8_K;
    t.dequantize = k.deq;
    t.quantize = k.quant;
    t.quantize_act = quantize_q8_K;
    t.dot_ref = k.ref;
    t.dot = k.ref;
    t.dot_impl = "scalar";
#if defined(OSCAR_X86)
    if (cpu.has_avx2_family()) t.quantize_act = quantize_q8_K_avx2;
    if (cpu.has_avx512_family()) {
      const bool vnni = cpu.avx512vnni;
      t.dot = vnni ? k.avx512vnni : k.avx512;
      t.dot_impl = vnni ? "avx512vnni" : "avx512";
      if (k.paired_ref) {
        t.act_order = ActOrder::kPairedQ8K;
        t.quantize_act = quantize_q8_K_paired_avx2;
        t.dot_ref = k.paired_ref;
      }
    } else if (cpu.has_avx2_family()) {
      t.dot = k.avx2;
      t.dot_impl = "avx2";
    }
#elif defined(__aarch64__)
    if (cpu.neon) {
      const KQuantDots set = cpu.arm_dotprod ? kquant_dots_neondot() : kquant_dots_neon();
      const DotTileFn by_type[] = {set.q2_K, set.q3_K, set.q4_K, set.q5_K, set.q6_K};
      t.dot = by_type[&k - rows];
      t.dot_impl = cpu.arm_dotprod ? "neon-dotprod" : "neon";
    }
#endif
    present[(uint32_t)k.type] = true;
  }
}

}  // namespace oscar::quant
