// The ggml 32-value block formats Q4_0, Q4_1, Q5_0, Q5_1, Q8_0: scalar
// reference decoders, encoders, the Q8_0 / Q8_1 activation encoders, the
// scalar reference dot tiles, and the choice of SIMD kernel for the CPU.
//
// Activations: Q4_0, Q5_0 and Q8_0 weights take Q8_0 activations (the offset
// of Q4_0 / Q5_0 is handled inside the integer dot). Q4_1 and Q5_1 take Q8_1,
// whose s = d * sum(q) turns the weight minimum m into one multiply per block:
// sum_j (dw q_j + m)(da a_j) = dw da sum_j q_j a_j + m s.
#include <algorithm>
#include <cmath>
#include <cstring>

#include "core/fp16.h"
#include "quant/blocks_legacy.h"

namespace oscar::quant {
namespace {

// Largest finite half. Scales beyond it are saturated rather than stored as
// inf (ggml would store inf and decode NaNs); values then clamp, which is the
// best a half scale can do.
constexpr float kHalfMax = 65504.0f;

// Rounds a scale to f16 and returns the stored bits; `*rounded` gets the value
// the decoder will see. Encoders divide by the rounded scale so the only
// rounding error left per value is the quantization step itself.
uint16_t round_scale(float d, float* rounded) {
  d = std::clamp(d, -kHalfMax, kHalfMax);
  const uint16_t h = f32_to_fp16(d);
  *rounded = fp16_to_f32(h);
  return h;
}

// floor(t) clamped to [lo, hi]; NaN maps to lo (no UB on float->int casts).
inline int clamp_floor(float t, int lo, int hi) {
  if (t >= (float)hi) return hi;
  if (!(t > (float)lo)) return lo;
  return (int)std::floor(t);
}

// Value with the largest magnitude (its sign matters for the _0 formats: it
// maps to the extreme code -8 / -16 exactly, ggml's rule).
float signed_absmax(const float* x) {
  float amax = 0.0f, m = 0.0f;
  for (int j = 0; j < kQK; ++j)
    if (std::fabs(x[j]) > amax) {
      amax = std::fabs(x[j]);
      m = x[j];
    }
  return m;
}

void min_max(const float* x, float* mn, float* mx) {
  float lo = x[0], hi = x[0];
  for (int j = 1; j < kQK; ++j) {
    lo = std::min(lo, x[j]);
    hi = std::max(hi, x[j]);
  }
  *mn = lo;
  *mx = hi;
}

// ---- encoders ---------------------------------------------------------------

void quantize_q4_0(const float* x, void* dst, int64_t n) {
  auto* y = static_cast<BlockQ4_0*>(dst);
  for (int64_t b = 0; b < n / kQK; ++b, x += kQK) {
    float d;
    y[b].d = round_scale(signed_absmax(x) / -8.0f, &d);
    const float id = d != 0.0f ? 1.0f / d : 0.0f;
    for (int j = 0; j < 16; ++j) {
      const int q0 = clamp_floor(x[j] * id + 8.5f, 0, 15);
      const int q1 = clamp_floor(x[j + 16] * id + 8.5f, 0, 15);
      y[b].qs[j] = (uint8_t)(q0 | (q1 << 4));
    }
  }
}

void quantize_q4_1(const float* x, void* dst, int64_t n) {
  auto* y = static_cast<BlockQ4_1*>(dst);
  for (int64_t b = 0; b < n / kQK; ++b, x += kQK) {
    float mn, mx, d, m;
    min_max(x, &mn, &mx);
    y[b].d = round_scale((mx - mn) / 15.0f, &d);
    y[b].m = round_scale(mn, &m);
    const float id = d != 0.0f ? 1.0f / d : 0.0f;
    for (int j = 0; j < 16; ++j) {
      const int q0 = clamp_floor((x[j] - m) * id + 0.5f, 0, 15);
      const int q1 = clamp_floor((x[j + 16] - m) * id + 0.5f, 0, 15);
      y[b].qs[j] = (uint8_t)(q0 | (q1 << 4));
    }
  }
}

// Splits 32 five-bit codes into the nibble bytes and the qh word.
void pack5(const int* q, uint8_t* qs, uint8_t* qh) {
  uint32_t h = 0;
  for (int j = 0; j < 16; ++j) {
    qs[j] = (uint8_t)((q[j] & 15) | ((q[j + 16] & 15) << 4));
    h |= (uint32_t)(q[j] >> 4) << j;
    h |= (uint32_t)(q[j + 16] >> 4) << (j + 16);
  }
  for (int i = 0; i < 4; ++i) qh[i] = (uint8_t)(h >> (8 * i));
}

void quantize_q5_0(const float* x, void* dst, int64_t n) {
  auto* y = static_cast<BlockQ5_0*>(dst);
  for (int64_t b = 0; b < n / kQK; ++b, x += kQK) {
    float d;
    y[b].d = round_scale(signed_absmax(x) / -16.0f, &d);
    const float id = d != 0.0f ? 1.0f / d : 0.0f;
    int q[kQK];
    for (int j = 0; j < kQK; ++j) q[j] = clamp_floor(x[j] * id + 16.5f, 0, 31);
    pack5(q, y[b].qs, y[b].qh);
  }
}

void quantize_q5_1(const float* x, void* dst, int64_t n) {
  auto* y = static_cast<BlockQ5_1*>(dst);
  for (int64_t b = 0; b < n / kQK; ++b, x += kQK) {
    float mn, mx, d, m;
    min_max(x, &mn, &mx);
    y[b].d = round_scale((mx - mn) / 31.0f, &d);
    y[b].m = round_scale(mn, &m);
    const float id = d != 0.0f ? 1.0f / d : 0.0f;
    int q[kQK];
    for (int j = 0; j < kQK; ++j) q[j] = clamp_floor((x[j] - m) * id + 0.5f, 0, 31);
    pack5(q, y[b].qs, y[b].qh);
  }
}

// Symmetric 8-bit: d = amax / 127, q = round(x / d). Returns sum(q).
int quantize_block_q8(const float* x, uint16_t* dh, int8_t* qs) {
  float amax = 0.0f;
  for (int j = 0; j < kQK; ++j) amax = std::max(amax, std::fabs(x[j]));
  float d;
  *dh = round_scale(amax / 127.0f, &d);
  const float id = d != 0.0f ? 1.0f / d : 0.0f;
  int sum = 0;
  for (int j = 0; j < kQK; ++j) {
    const int q = clamp_floor(x[j] * id + 0.5f, -127, 127);
    qs[j] = (int8_t)q;
    sum += q;
  }
  return sum;
}

void quantize_q8_0(const float* x, void* dst, int64_t n) {
  auto* y = static_cast<BlockQ8_0*>(dst);
  for (int64_t b = 0; b < n / kQK; ++b, x += kQK) quantize_block_q8(x, &y[b].d, y[b].qs);
}

void quantize_q8_1(const float* x, void* dst, int64_t n) {
  auto* y = static_cast<BlockQ8_1*>(dst);
  for (int64_t b = 0; b < n / kQK; ++b, x += kQK) {
    const int sum = quantize_block_q8(x, &y[b].d, y[b].qs);
    y[b].s = f32_to_fp16(fp16_to_f32(y[b].d) * (float)sum);
  }
}

// ---- decoders ---------------------------------------------------------------

// Code j (0..31) of a 4-bit block.
inline int nib(const uint8_t* qs, int j) { return j < 16 ? (qs[j] & 15) : (qs[j - 16] >> 4); }
inline int fifth(const uint8_t* qh, int j) { return (qh[j >> 3] >> (j & 7)) & 1; }

void dequantize_q4_0(const void* src, float* y, int64_t n) {
  const auto* x = static_cast<const BlockQ4_0*>(src);
  for (int64_t b = 0; b < n / kQK; ++b, y += kQK) {
    const float d = fp16_to_f32(x[b].d);
    for (int j = 0; j < kQK; ++j) y[j] = d * (float)(nib(x[b].qs, j) - 8);
  }
}

void dequantize_q4_1(const void* src, float* y, int64_t n) {
  const auto* x = static_cast<const BlockQ4_1*>(src);
  for (int64_t b = 0; b < n / kQK; ++b, y += kQK) {
    const float d = fp16_to_f32(x[b].d), m = fp16_to_f32(x[b].m);
    for (int j = 0; j < kQK; ++j) y[j] = d * (float)nib(x[b].qs, j) + m;
  }
}

void dequantize_q5_0(const void* src, float* y, int64_t n) {
  const auto* x = static_cast<const BlockQ5_0*>(src);
  for (int64_t b = 0; b < n / kQK; ++b, y += kQK) {
    const float d = fp16_to_f32(x[b].d);
    for (int j = 0; j < kQK; ++j)
      y[j] = d * (float)((nib(x[b].qs, j) | (fifth(x[b].qh, j) << 4)) - 16);
  }
}

void dequantize_q5_1(const void* src, float* y, int64_t n) {
  const auto* x = static_cast<const BlockQ5_1*>(src);
  for (int64_t b = 0; b < n / kQK; ++b, y += kQK) {
    const float d = fp16_to_f32(x[b].d), m = fp16_to_f32(x[b].m);
    for (int j = 0; j < kQK; ++j)
      y[j] = d * (float)(nib(x[b].qs, j) | (fifth(x[b].qh, j) << 4)) + m;
  }
}

void dequantize_q8_0(const void* src, float* y, int64_t n) {
  const auto* x = static_cast<const BlockQ8_0*>(src);
  for (int64_t b = 0; b < n / kQK; ++b, y += kQK) {
    const float d = fp16_to_f32(x[b].d);
    for (int j = 0; j < kQK; ++j) y[j] = d * (float)x[b].qs[j];
  }
}

// ---- scalar reference dot tiles ---------------------------------------------

// Integer codes of weight block b (offsets included for the _0 formats, so
// that x = d * code (+ m for the _1 formats)).
template <LegacyKind K>
void codes(const uint8_t* row, int64_t b, int* q, float* d, float* m) {
  if constexpr (K == kQ4_0) {
    const auto& x = reinterpret_cast<const BlockQ4_0*>(row)[b];
    for (int j = 0; j < kQK; ++j) q[j] = nib(x.qs, j) - 8;
    *d = fp16_to_f32(x.d);
  } else if constexpr (K == kQ4_1) {
    const auto& x = reinterpret_cast<const BlockQ4_1*>(row)[b];
    for (int j = 0; j < kQK; ++j) q[j] = nib(x.qs, j);
    *d = fp16_to_f32(x.d);
    *m = fp16_to_f32(x.m);
  } else if constexpr (K == kQ5_0) {
    const auto& x = reinterpret_cast<const BlockQ5_0*>(row)[b];
    for (int j = 0; j < kQK; ++j) q[j] = (nib(x.qs, j) | (fifth(x.qh, j) << 4)) - 16;
    *d = fp16_to_f32(x.d);
  } else if constexpr (K == kQ5_1) {
    const auto& x = reinterpret_cast<const BlockQ5_1*>(row)[b];
    for (int j = 0; j < kQK; ++j) q[j] = nib(x.qs, j) | (fifth(x.qh, j) << 4);
    *d = fp16_to_f32(x.d);
    *m = fp16_to_f32(x.m);
  } else {
    const auto& x = reinterpret_cast<const BlockQ8_0*>(row)[b];
    for (int j = 0; j < kQK; ++j) q[j] = x.qs[j];
    *d = fp16_to_f32(x.d);
  }
}

// The _1 formats pair with Q8_1 activations, the others with Q8_0.
constexpr bool uses_q8_1(LegacyKind k) { return k == kQ4_1 || k == kQ5_1; }

template <LegacyKind K>
void dot_ref(int64_t n, const void* w, size_t w_stride, int nr, const void* act,
             size_t act_stride, int nc, float* out, size_t out_stride) {
  const int64_t nb = n / kQK;
  for (int r = 0; r < nr; ++r) {
    const auto* wr = static_cast<const uint8_t*>(w) + (size_t)r * w_stride;
    for (int c = 0; c < nc; ++c) {
      const auto* ar = static_cast<const uint8_t*>(act) + (size_t)c * act_stride;
      double acc = 0.0;
      for (int64_t b = 0; b < nb; ++b) {
        int q[kQK];
        float dw = 0.0f, m = 0.0f;
        codes<K>(wr, b, q, &dw, &m);
        const int8_t* a;
        float da, s = 0.0f;
        if constexpr (uses_q8_1(K)) {
          const auto& y = reinterpret_cast<const BlockQ8_1*>(ar)[b];
          a = y.qs;
          da = fp16_to_f32(y.d);
          s = fp16_to_f32(y.s);
        } else {
          const auto& y = reinterpret_cast<const BlockQ8_0*>(ar)[b];
          a = y.qs;
          da = fp16_to_f32(y.d);
        }
        int isum = 0;
        for (int j = 0; j < kQK; ++j) isum += q[j] * a[j];
        acc += (double)dw * (double)da * isum + (double)m * (double)s;
      }
      out[(size_t)r * out_stride + c] = (float)acc;
    }
  }
}

}  // namespace

const LegacyKernelSet& legacy_kernels_scalar() {
  static const LegacyKernelSet k = {
      {dot_ref<kQ4_0>, dot_ref<kQ4_1>, dot_ref<kQ5_0>, dot_ref<kQ5_1>, dot_ref<kQ8_0>}};
  return k;
}

void register_legacy_types(QuantTraits* table, bool* present, const CpuFeatures& cpu) {
  const LegacyKernelSet* best = &legacy_kernels_scalar();
  const char* impl = "scalar";
#if defined(OSCAR_X86)
  if (cpu.has_avx512_family() && cpu.avx512vnni) {
    best = &legacy_kernels_avx512vnni();
    impl = "avx512vnni";
  } else if (cpu.has_avx512_family()) {
    best = &legacy_kernels_avx512();
    impl = "avx512";
  } else if (cpu.has_avx2_family()) {
    best = &legacy_kernels_avx2();
    impl = "avx2";
  }
#elif defined(__aarch64__)
  if (cpu.arm_dotprod) {
    best = &legacy_kernels_neondot();
    impl = "neon-dotprod";
  } else if (cpu.neon) {
    best = &legacy_kernels_neon();
    impl = "neon";
  }
#endif
  const LegacyKernelSet& ref = legacy_kernels_scalar();
  struct Row {
    TensorType type;
    LegacyKind kind;
    DequantizeRowFn deq;
    QuantizeRowFn q;
  };
  const Row rows[] = {
      {TensorType::Q4_0, kQ4_0, dequantize_q4_0, quantize_q4_0},
      {TensorType::Q4_1, kQ4_1, dequantize_q4_1, quantize_q4_1},
      {TensorType::Q5_0, kQ5_0, dequantize_q5_0, quantize_q5_0},
      {TensorType::Q5_1, kQ5_1, dequantize_q5_1, quantize_q5_1},
      {TensorType::Q8_0, kQ8_0, dequantize_q8_0, quantize_q8_0},
  };
  for (const Row& r : rows) {
    const bool q81 = uses_q8_1(r.kind);
    QuantTraits& t = table[(uint32_t)r.type];
    t.type = r.type;
    t.act_type = q81 ? TensorType::Q8_1 : TensorType::Q8_0;
    t.dequantize = r.deq;
    t.quantize = r.q;
    t.quantize_act = q81 ? quantize_q8_1 : quantize_q8_0;
    t.dot_ref = ref.dot[r.kind];
    t.dot = best->dot[r.kind];
    t.dot_impl = t.dot == t.dot_ref ? "scalar" : impl;  // a set may keep some kinds scalar (ARM)
    present[(uint32_t)r.type] = true;
  }
}

}  // namespace oscar::quant
