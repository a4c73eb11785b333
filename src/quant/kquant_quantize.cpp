// k-quant encoders (weights: for the tools and the tests) and the Q8_K
// activation encoder used on every matmul input row.
//
// Weights are quantized in two levels, as the format dictates: each
// sub-block (16 or 32 values) gets a float scale (and min) from a small search
// that minimises the squared error, then those are themselves quantized
// against a per-super-block f16 scale, and finally every value is re-encoded
// with the scale and min it will actually be decoded with.
#include <algorithm>
#include <cmath>

#include "core/fp16.h"
#include "quant/kquant_blocks.h"

namespace oscar::quant {
namespace {

inline int nint(float x) { return (int)std::lrintf(x); }
inline int clampi(int v, int lo, int hi) { return v < lo ? lo : (v > hi ? hi : v); }
// Rounds through f16 so the encoder works with the scale the decoder sees.
inline float f16_round(float x, uint16_t* h) {
  *h = f32_to_fp16(x);
  return fp16_to_f32(*h);
}

// Fits x ~= scale * q - min with q in [0, nmax], scale >= 0, min >= 0 (the
// format can only shift values down). Tries a few grid spacings around
// (max - lo) / nmax and solves least squares for (scale, min) given each q.
void fit_scale_min(const float* x, int n, int nmax, float* scale, float* min) {
  float lo = x[0], hi = x[0];
  for (int i = 1; i < n; ++i) {
    lo = std::min(lo, x[i]);
    hi = std::max(hi, x[i]);
  }
  lo = std::min(lo, 0.0f);
  if (hi <= lo) {  // all values equal and <= 0 (or all zero)
    *scale = 0;
    *min = -lo;
    return;
  }
  float best_a = (hi - lo) / nmax, best_b = lo, best_err = 0;
  for (int i = 0; i < n; ++i) {
    const int q = clampi(nint((x[i] - lo) / best_a), 0, nmax);
    const float e = best_a * q + lo - x[i];
    best_err += e * e;
  }
  for (int step = -10; step <= 10; ++step) {
    const float iscale = (nmax + 0.1f * step) / (hi - lo);
    float sq = 0, sqq = 0, sx = 0, sxq = 0;
    int q[32];
    for (int i = 0; i < n; ++i) {
      q[i] = clampi(nint(iscale * (x[i] - lo)), 0, nmax);
      sq += q[i];
      sqq += (float)q[i] * q[i];
      sx += x[i];
      sxq += x[i] * q[i];
    }
    // Least squares for x = a q + b; b must stay <= 0.
    const float det = n * sqq - sq * sq;
    if (det <= 0) continue;
    float a = (n * sxq - sq * sx) / det;
    float b = (sqq * sx - sq * sxq) / det;
    if (b > 0) {
      b = 0;
      a = sqq > 0 ? sxq / sqq : 0;
    }
    if (a <= 0) continue;
    float err = 0;
    for (int i = 0; i < n; ++i) {
      const float e = a * q[i] + b - x[i];
      err += e * e;
    }
    if (err < best_err) {
      best_err = err;
      best_a = a;
      best_b = b;
    }
  }
  *scale = best_a;
  *min = -best_b;
}

// Fits x ~= scale * q with q in [-(nmax + 1), nmax] (scale may be negative,
// so the extra negative level can serve either sign).
float fit_scale_sym(const float* x, int n, int nmax) {
  float amax = 0, vmax = 0;
  for (int i = 0; i < n; ++i)
    if (std::fabs(x[i]) > amax) {
      amax = std::fabs(x[i]);
      vmax = x[i];
    }
  if (amax == 0) return 0;
  float best = 0, best_score = -1;
  for (int sign = 0; sign < 2; ++sign) {
    for (int step = -9; step <= 9; ++step) {
      const float iscale = sign ? -(nmax + 1 + 0.1f * step) / vmax : (nmax + 0.1f * step) / vmax;
      float sxq = 0, sqq = 0;
      for (int i = 0; i < n; ++i) {
        const int q = clampi(nint(iscale * x[i]), -(nmax + 1), nmax);
        sxq += x[i] * q;
        sqq += (float)q * q;
      }
      // Error is sum x^2 - sxq^2 / sqq for the best scale sxq / sqq.
      if (sqq > 0 && sxq * sxq / sqq > best_score) {
        best_score = sxq * sxq / sqq;
        best = sxq / sqq;
      }
    }
  }
  return best;
}

// Quantizes per-sub-block non-negative values v[0..n) to integers in
// [0, nmax] against a f16 super-scale; returns that scale.
float quant_unsigned_scales(const float* v, int n, int nmax, uint8_t* out, uint16_t* h) {
  float vmax = 0;
  for (int j = 0; j < n; ++j) vmax = std::max(vmax, v[j]);
  const float d = f16_round(vmax / nmax, h);
  for (int j = 0; j < n; ++j) out[j] = d > 0 ? (uint8_t)clampi(nint(v[j] / d), 0, nmax) : 0;
  return d;
}

// Same for signed values to integers in [-(nmax+1), nmax].
float quant_signed_scales(const float* v, int n, int nmax, int* out, uint16_t* h) {
  float amax = 0, vmax = 0;
  for (int j = 0; j < n; ++j)
    if (std::fabs(v[j]) > amax) {
      amax = std::fabs(v[j]);
      vmax = v[j];
    }
  const float d = f16_round(-vmax / (nmax + 1), h);
  for (int j = 0; j < n; ++j) out[j] = d != 0 ? clampi(nint(v[j] / d), -(nmax + 1), nmax) : 0;
  return d;
}

// Encodes one super-block of an asymmetric type (Q2_K: 16 x 16, Q4_K/Q5_K:
// 8 x 32) to per-value integers q[256] and integer scales/mins.
void encode_asym(const float* x, int sub, int nmax, int scale_max, uint8_t* q, uint8_t* sc,
                 uint8_t* mn, uint16_t* dh, uint16_t* mh) {
  const int ng = 256 / sub;
  float scales[16], mins[16];
  for (int g = 0; g < ng; ++g) fit_scale_min(x + g * sub, sub, nmax, &scales[g], &mins[g]);
  const float d = quant_unsigned_scales(scales, ng, scale_max, sc, dh);
  const float dm = quant_unsigned_scales(mins, ng, scale_max, mn, mh);
  for (int g = 0; g < ng; ++g) {
    const float ds = d * sc[g], m = dm * mn[g];
    for (int i = g * sub; i < (g + 1) * sub; ++i)
      q[i] = ds > 0 ? (uint8_t)clampi(nint((x[i] + m) / ds), 0, nmax) : 0;
  }
}

// Encodes one super-block of a symmetric type (16 sub-blocks of 16); q[i] is
// returned biased by nmax + 1 (so 0..2 nmax + 1).
void encode_sym(const float* x, int nmax, int scale_nmax, uint8_t* q, int* sc, uint16_t* dh) {
  float scales[16];
  for (int g = 0; g < 16; ++g) scales[g] = fit_scale_sym(x + 16 * g, 16, nmax);
  const float d = quant_signed_scales(scales, 16, scale_nmax, sc, dh);
  for (int g = 0; g < 16; ++g) {
    const float ds = d * sc[g];
    for (int i = 16 * g; i < 16 * g + 16; ++i) {
      const int v = ds != 0 ? clampi(nint(x[i] / ds), -(nmax + 1), nmax) : 0;
      q[i] = (uint8_t)(v + nmax + 1);
    }
  }
}

// Packs 8 scales and 8 mins (0..63) into the Q4_K/Q5_K 12-byte field.
void pack_scales_k4(const uint8_t sc[8], const uint8_t mn[8], uint8_t b[12]) {
  for (int j = 0; j < 4; ++j) {
    b[j] = (uint8_t)((sc[j] & 63) | ((sc[j + 4] >> 4) << 6));
    b[j + 4] = (uint8_t)((mn[j] & 63) | ((mn[j + 4] >> 4) << 6));
    b[j + 8] = (uint8_t)((sc[j + 4] & 15) | ((mn[j + 4] & 15) << 4));
  }
}

}  // namespace

void quantize_q2_K(const float* src, void* dst, int64_t n) {
  auto* b = static_cast<BlockQ2_K*>(dst);
  for (int64_t ib = 0; ib < n / kQK_K; ++ib, ++b, src += kQK_K) {
    uint8_t q[256], sc[16], mn[16];
    encode_asym(src, 16, 3, 15, q, sc, mn, &b->d, &b->dmin);
    for (int g = 0; g < 16; ++g) b->scales[g] = (uint8_t)(sc[g] | (mn[g] << 4));
    for (int h = 0; h < 2; ++h)
      for (int l = 0; l < 32; ++l) {
        const uint8_t* p = q + 128 * h + l;
        b->qs[32 * h + l] = (uint8_t)(p[0] | (p[32] << 2) | (p[64] << 4) | (p[96] << 6));
      }
  }
}

void quantize_q3_K(const float* src, void* dst, int64_t n) {
  auto* b = static_cast<BlockQ3_K*>(dst);
  for (int64_t ib = 0; ib < n / kQK_K; ++ib, ++b, src += kQK_K) {
    uint8_t q[256];  // 0..7
    int sc[16];
    encode_sym(src, 3, 31, q, sc, &b->d);
    std::memset(b->scales, 0, 12);
    for (int j = 0; j < 16; ++j) {
      const int v = sc[j] + 32;  // 0..63
      b->scales[j % 8] |= (uint8_t)((v & 15) << (j < 8 ? 0 : 4));
      b->scales[8 + j % 4] |= (uint8_t)((v >> 4) << (2 * (j / 4)));
    }
    std::memset(b->hmask, 0, 32);
    std::memset(b->qs, 0, 64);
    for (int i = 0; i < 256; ++i) {
      const int h = i / 128, j = (i % 128) / 32, l = i % 32;
      b->qs[32 * h + l] |= (uint8_t)((q[i] & 3) << (2 * j));
      b->hmask[l] |= (uint8_t)((q[i] >> 2) << (4 * h + j));
    }
  }
}

void quantize_q4_K(const float* src, void* dst, int64_t n) {
  auto* b = static_cast<BlockQ4_K*>(dst);
  for (int64_t ib = 0; ib < n / kQK_K; ++ib, ++b, src += kQK_K) {
    uint8_t q[256], sc[8], mn[8];
    encode_asym(src, 32, 15, 63, q, sc, mn, &b->d, &b->dmin);
    pack_scales_k4(sc, mn, b->scales);
    for (int c = 0; c < 4; ++c)
      for (int l = 0; l < 32; ++l) b->qs[32 * c + l] = (uint8_t)(q[64 * c + l] | (q[64 * c + 32 + l] << 4));
  }
}

void quantize_q5_K(const float* src, void* dst, int64_t n) {
  auto* b = static_cast<BlockQ5_K*>(dst);
  for (int64_t ib = 0; ib < n / kQK_K; ++ib, ++b, src += kQK_K) {
    uint8_t q[256], sc[8], mn[8];
    encode_asym(src, 32, 31, 63, q, sc, mn, &b->d, &b->dmin);
    pack_scales_k4(sc, mn, b->scales);
    std::memset(b->qh, 0, 32);
    for (int c = 0; c < 4; ++c)
      for (int l = 0; l < 32; ++l) {
        const uint8_t lo = q[64 * c + l], hi = q[64 * c + 32 + l];
        b->qs[32 * c + l] = (uint8_t)((lo & 15) | ((hi & 15) << 4));
        b->qh[l] |= (uint8_t)(((lo >> 4) << (2 * c)) | ((hi >> 4) << (2 * c + 1)));
      }
  }
}

void quantize_q6_K(const float* src, void* dst, int64_t n) {
  auto* b = static_cast<BlockQ6_K*>(dst);
  for (int64_t ib = 0; ib < n / kQK_K; ++ib, ++b, src += kQK_K) {
    uint8_t q[256];  // 0..63
    int sc[16];
    encode_sym(src, 31, 127, q, sc, &b->d);
    for (int g = 0; g < 16; ++g) b->scales[g] = (int8_t)sc[g];
    for (int h = 0; h < 2; ++h)
      for (int l = 0; l < 32; ++l) {
        const uint8_t* p = q + 128 * h + l;
        b->ql[64 * h + l] = (uint8_t)((p[0] & 15) | ((p[64] & 15) << 4));
        b->ql[64 * h + 32 + l] = (uint8_t)((p[32] & 15) | ((p[96] & 15) << 4));
        b->qh[32 * h + l] =
            (uint8_t)((p[0] >> 4) | ((p[32] >> 4) << 2) | ((p[64] >> 4) << 4) | ((p[96] >> 4) << 6));
      }
  }
}

// Q8_K: d = max|x| / 127 so every value fits in [-127, 127] (never -128,
// which keeps the SIMD products of the dot kernels clear of int16 overflow).
void quantize_q8_K(const float* src, void* dst, int64_t n) {
  auto* b = static_cast<BlockQ8_K*>(dst);
  for (int64_t ib = 0; ib < n / kQK_K; ++ib, ++b, src += kQK_K) {
    float amax = 0;
    for (int i = 0; i < 256; ++i) amax = std::max(amax, std::fabs(src[i]));
    if (!(amax > 0) || !std::isfinite(amax)) {
      // Zeros (or non-finite input, which has no meaningful encoding).
      b->d = amax > 0 ? amax : 0;
      std::memset(b->qs, 0, sizeof b->qs);
      std::memset(b->bsums, 0, sizeof b->bsums);
      continue;
    }
    const float id = 127.0f / amax;
    b->d = amax / 127.0f;
    for (int g = 0; g < 16; ++g) {
      int sum = 0;
      for (int i = 16 * g; i < 16 * g + 16; ++i) {
        const int q = clampi(nint(src[i] * id), -127, 127);
        b->qs[i] = (int8_t)q;
        sum += q;
      }
      b->bsums[g] = (int16_t)sum;
    }
  }
}

void pair_q8_K_chunks(void* row, int64_t n) {
  auto* b = static_cast<BlockQ8_K*>(row);
  for (int64_t ib = 0; ib < n / kQK_K; ++ib)
    for (int h = 0; h < 2; ++h) {
      int8_t tmp[32];
      int8_t* x = b[ib].qs + 128 * h;
      std::memcpy(tmp, x + 32, 32);
      std::memcpy(x + 32, x + 64, 32);
      std::memcpy(x + 64, tmp, 32);
    }
}

}  // namespace oscar::quant
