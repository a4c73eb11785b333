// k-quant dot tiles with plain NEON (any ARMv8 CPU; kquant_dot_neon_impl.h).
#include <arm_neon.h>

#include "quant/kquant_blocks.h"

namespace oscar::quant {
namespace {

// 16 products by widening multiplies (smull, smull2) and pairwise
// accumulation (saddlp, sadalp): codes are below 128, so they are int8 too.
inline int32x4_t group_dot(const uint8_t* u, const int8_t* a) {
  const int8x16_t w = vreinterpretq_s8_u8(vld1q_u8(u)), x = vld1q_s8(a);
  const int32x4_t lo = vpaddlq_s16(vmull_s8(vget_low_s8(w), vget_low_s8(x)));
  return vpadalq_s16(lo, vmull_high_s8(w, x));
}

#include "quant/kquant_dot_neon_impl.h"

}  // namespace

KQuantDots kquant_dots_neon() { return kquant_dots(); }

}  // namespace oscar::quant
