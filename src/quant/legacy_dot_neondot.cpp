// Q8_0 dot tiles with the dot-product extension (ARMv8.2 FEAT_DotProd:
// sdot; this file is compiled for armv8.2-a+dotprod and called only where
// the CPU's hwcaps show it; legacy_dot_neon_impl.h).
#include <arm_neon.h>

#include <cstring>

#include "quant/blocks_legacy.h"

namespace oscar::quant {
namespace {

// 32 int8 products of a block in two sdot: 4 products per int32 lane each.
inline int32x4_t block_dot(int32x4_t acc, const int8_t* w, const int8_t* a) {
  acc = vdotq_s32(acc, vld1q_s8(w), vld1q_s8(a));
  return vdotq_s32(acc, vld1q_s8(w + 16), vld1q_s8(a + 16));
}

#include "quant/legacy_dot_neon_impl.h"

}  // namespace

const LegacyKernelSet& legacy_kernels_neondot() {
  static const LegacyKernelSet k = [] {
    LegacyKernelSet s = legacy_kernels_scalar();
    s.dot[kQ8_0] = q8_0_tile;
    return s;
  }();
  return k;
}

}  // namespace oscar::quant
