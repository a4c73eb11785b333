// The q2_0 KV row codec (OSCAR): per row of d values (one token, one KV
// head, after rotation):
//   1. optional clipping: t = the floor(ratio*d)-th smallest |x| (0-based,
//      capped at d-1); every x is clamped to [-t, t] (ratio 0: no clipping);
//   2. groups of g values; per group lo = min, hi = max, s = (hi - lo)/3,
//      stored as f16; code = clamp(round((x - lo)/s), 0, 3);
//   3. x̂ = lo + s*code.
// Group layout: [f16 s][f16 lo][g/4 bytes of codes]. Byte j of a group holds
// the codes of values j, j+g/4, j+g/2, j+3g/4 in bits 0-1, 2-3, 4-5, 6-7, so
// one shift-and-mask yields a contiguous quarter of the group (SIMD-friendly).
// At d = g = 128 a row is 36 bytes: 2.25 bits per value.
#pragma once

#include <cstddef>
#include <cstdint>

#include "core/cpu_features.h"

namespace oscar::kv {

struct Q2Params {
  float clip_ratio = 0.0f;  // 0 disables clipping
  int group_size = 0;       // 0: the whole row (head dim)
};

// Group size actually used for rows of d values.
int q2_group(int d, const Q2Params& p);
// Validates d and the group size (g divides d, g multiple of 4, g >= 4).
bool q2_valid(int d, const Q2Params& p);
size_t q2_row_bytes(int d, const Q2Params& p);

// The rank of the clipping threshold: floor(ratio * d) capped at d - 1.
int q2_clip_rank(int d, float ratio);
// The clipping threshold of the rule above (for tests and reports).
float q2_clip_threshold(const float* x, int d, float ratio);

// The q2_0 encoder for a CPU: its SIMD encoder (q2_codec_simd.h) where the
// CPU has one and the row suits it, else q2_encode_reference; the bytes are
// the same. Built from the CpuFeatures the caller was given (a RowCodec from
// its QuantTable's); CpuFeatures{} encodes with the reference only.
class Q2Encoder {
 public:
  explicit Q2Encoder(const CpuFeatures& cpu = {});
  void operator()(const float* x, uint8_t* out, int d, const Q2Params& p) const;
  // "avx512", "neon" or "scalar".
  const char* name() const { return name_; }

 private:
  bool (*simd_)(const float*, uint8_t*, int, const Q2Params&) = nullptr;
  const char* name_ = "scalar";
};
// The scalar encoder, which the SIMD one is tested against.
void q2_encode_reference(const float* x, uint8_t* out, int d, const Q2Params& p);
void q2_decode(const uint8_t* in, float* out, int d, const Q2Params& p);

// Attention reads q2_0 rows through their codes in src/attention/row_kernels*
// (SIMD, tested against q2_decode).

}  // namespace oscar::kv
