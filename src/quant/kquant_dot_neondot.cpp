// k-quant dot tiles with the dot-product extension (ARMv8.2 FEAT_DotProd;
// compiled for armv8.2-a+dotprod, called only where the hwcaps show it;
// kquant_dot_neon_impl.h).
#include <arm_neon.h>

#include "quant/kquant_blocks.h"

namespace oscar::quant {
namespace {

// 16 products in one sdot (codes are below 128, so they are int8 too).
inline int32x4_t group_dot(const uint8_t* u, const int8_t* a) {
  return vdotq_s32(vdupq_n_s32(0), vreinterpretq_s8_u8(vld1q_u8(u)), vld1q_s8(a));
}

#include "quant/kquant_dot_neon_impl.h"

}  // namespace

KQuantDots kquant_dots_neondot() { return kquant_dots(); }

}  // namespace oscar::quant
