// An independent reference of the q2_0 row codec, written from docs/OSCAR.md
// (§2, "The q2_0 row codec") and the layout documented in src/kv/q2_codec.h,
// for the KV tests. It does not call the code under test: f16 rounding is
// done here too, and codes are chosen in double precision.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <string>
#include <vector>

namespace oscar::kvtest {

// double -> IEEE half bits (one rounding), round to nearest even (normal, subnormal, overflow
// to inf). Independent of core/fp16.h.
inline uint16_t ref_to_f16(double x) {
  const uint16_t sign = std::signbit(x) ? 0x8000 : 0;
  double a = std::fabs(x);
  if (std::isnan(x)) return 0x7e00;
  if (a == 0) return sign;
  int e;
  std::frexp(a, &e);  // a = m * 2^e, m in [0.5, 1)
  int exp = e - 1;    // a = 1.m * 2^exp
  if (exp < -14) exp = -14;  // subnormal range: quantum 2^-24
  const double quantum = std::ldexp(1.0, exp - 10);
  double q = std::nearbyint(a / quantum);  // exact division by a power of two; RNE
  double v = q * quantum;
  if (v >= 65520.0) return sign | 0x7c00;
  // Re-derive the bits from the rounded value.
  if (v < std::ldexp(1.0, -14)) return sign | (uint16_t)(v / std::ldexp(1.0, -24));
  std::frexp(v, &e);
  const int be = e - 1 + 15;
  const uint16_t mant = (uint16_t)(v / std::ldexp(1.0, e - 1 - 10) - 1024.0);
  return sign | (uint16_t)(be << 10) | mant;
}

inline float ref_from_f16(uint16_t h) {
  const int s = h >> 15, e = (h >> 10) & 31, m = h & 1023;
  double v;
  if (e == 31) v = m ? NAN : INFINITY;
  else if (e == 0) v = std::ldexp((double)m, -24);
  else v = std::ldexp(1024.0 + m, e - 25);
  return (float)(s ? -v : v);
}

inline float f16r(float x) { return ref_from_f16(ref_to_f16(x)); }

// Rounds half to even in double (torch.round).
inline int round_half_even(double v) { return (int)std::nearbyint(v); }

// The clipping threshold for a rank given as an exact integer.
inline float ref_threshold(const std::vector<float>& x, int rank) {
  std::vector<float> a(x.size());
  for (size_t i = 0; i < x.size(); ++i) a[i] = std::fabs(x[i]);
  std::sort(a.begin(), a.end());
  rank = std::min(rank, (int)x.size() - 1);
  return a[(size_t)rank];
}

inline std::vector<float> ref_clip(const std::vector<float>& x, int rank) {
  const float t = ref_threshold(x, rank);
  std::vector<float> y(x);
  for (float& v : y) v = std::min(std::max(v, -t), t);
  return y;
}

// Encodes already-clipped values with group size g: per group f16 s, f16 lo
// (little endian), then g/4 code bytes (byte j: values j, j+g/4, j+g/2,
// j+3g/4 in bits 0-1, 2-3, 4-5, 6-7). s is (hi - lo)/3 rounded once to f16
// from double precision; codes are round((x - lo16)/s16) against the stored
// f16 values.
inline std::vector<uint8_t> ref_encode_clipped(const std::vector<float>& x, int g) {
  const int d = (int)x.size(), q = g / 4;
  std::vector<uint8_t> out;
  for (int g0 = 0; g0 < d; g0 += g) {
    float lo = x[(size_t)g0], hi = lo;
    for (int i = 1; i < g; ++i) {
      lo = std::min(lo, x[(size_t)(g0 + i)]);
      hi = std::max(hi, x[(size_t)(g0 + i)]);
    }
    const uint16_t s16 = ref_to_f16(((double)hi - (double)lo) / 3.0);
    const uint16_t l16 = ref_to_f16(lo);
    const double s = ref_from_f16(s16), l = ref_from_f16(l16);
    out.push_back((uint8_t)(s16 & 0xff));
    out.push_back((uint8_t)(s16 >> 8));
    out.push_back((uint8_t)(l16 & 0xff));
    out.push_back((uint8_t)(l16 >> 8));
    for (int j = 0; j < q; ++j) {
      uint8_t b = 0;
      for (int k = 0; k < 4; ++k) {
        const double v = x[(size_t)(g0 + j + k * q)];
        int c = s > 0 ? round_half_even((v - l) / s) : 0;
        c = std::clamp(c, 0, 3);
        b |= (uint8_t)(c << (2 * k));
      }
      out.push_back(b);
    }
  }
  return out;
}

// rank < 0: no clipping.
inline std::vector<uint8_t> ref_encode(const std::vector<float>& x, int g, int rank) {
  return ref_encode_clipped(rank < 0 ? x : ref_clip(x, rank), g);
}

inline std::vector<float> ref_decode(const uint8_t* in, int d, int g) {
  std::vector<float> out((size_t)d);
  const int q = g / 4;
  for (int g0 = 0; g0 < d; g0 += g) {
    const float s = ref_from_f16((uint16_t)(in[0] | (in[1] << 8)));
    const float l = ref_from_f16((uint16_t)(in[2] | (in[3] << 8)));
    for (int j = 0; j < q; ++j)
      for (int k = 0; k < 4; ++k) out[(size_t)(g0 + j + k * q)] = l + s * (float)((in[4 + j] >> (2 * k)) & 3);
    in += 4 + q;
  }
  return out;
}

// Checks one stored q2_0 row against the values it should hold (already
// clipped): per group lo16 is f16(min) exactly, s16 is f16((max - min)/3)
// (nearest, allowing the last-bit slack of a float computation), and every
// code is clamp(round_half_even((x - lo16)/s16), 0, 3) against the stored
// f16 values. Returns "" or a description of the first mismatch.
inline std::string q2_row_mismatch(const uint8_t* row, const std::vector<float>& x, int g) {
  const int d = (int)x.size(), q = g / 4;
  for (int g0 = 0; g0 < d; g0 += g) {
    float lo = x[(size_t)g0], hi = lo;
    for (int i = 1; i < g; ++i) {
      lo = std::min(lo, x[(size_t)(g0 + i)]);
      hi = std::max(hi, x[(size_t)(g0 + i)]);
    }
    const uint16_t s16 = (uint16_t)(row[0] | (row[1] << 8)), l16 = (uint16_t)(row[2] | (row[3] << 8));
    const std::string where = "group at " + std::to_string(g0) + ": ";
    if (l16 != ref_to_f16(lo)) return where + "lo16 " + std::to_string(l16) + " != f16(min)";
    const double s_exact = ((double)hi - (double)lo) / 3.0, s = ref_from_f16(s16), l = ref_from_f16(l16);
    const double ulp = s_exact > 0 ? std::ldexp(1.0, std::max(std::ilogb(s_exact), -14) - 10) : 0;
    if (std::fabs(s - s_exact) > 0.5 * ulp * (1 + 1e-3) + 1e-30)
      return where + "s16 " + std::to_string(s) + " is not f16 of " + std::to_string(s_exact);
    for (int j = 0; j < q; ++j)
      for (int k = 0; k < 4; ++k) {
        const int i = g0 + j + k * q;
        const int want = s > 0 ? std::clamp(round_half_even(((double)x[(size_t)i] - l) / s), 0, 3) : 0;
        const int got = (row[4 + j] >> (2 * k)) & 3;
        if (want != got)
          return where + "value " + std::to_string(i) + " (" + std::to_string(x[(size_t)i]) + ") code " +
                 std::to_string(got) + " expected " + std::to_string(want);
      }
    row += 4 + q;
  }
  return "";
}

// The clip rank floor(ratio * d) for a ratio given exactly as permille.
inline int rank_permille(int permille, int d) { return permille * d / 1000; }

}  // namespace oscar::kvtest
