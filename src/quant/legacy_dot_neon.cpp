// Q8_0 dot tiles with plain NEON (any ARMv8 CPU; legacy_dot_neon_impl.h).
// The other legacy formats keep their scalar kernels on ARM for now.
#include <arm_neon.h>

#include <cstring>

#include "quant/blocks_legacy.h"

namespace oscar::quant {
namespace {

// 32 int8 products of a block: widening multiplies (smull, smull2) and
// pairwise accumulation into int32 lanes (sadalp): 8 instructions a block.
inline int32x4_t block_dot(int32x4_t acc, const int8_t* w, const int8_t* a) {
  const int8x16_t w0 = vld1q_s8(w), w1 = vld1q_s8(w + 16), a0 = vld1q_s8(a), a1 = vld1q_s8(a + 16);
  acc = vpadalq_s16(acc, vmull_s8(vget_low_s8(w0), vget_low_s8(a0)));
  acc = vpadalq_s16(acc, vmull_high_s8(w0, a0));
  acc = vpadalq_s16(acc, vmull_s8(vget_low_s8(w1), vget_low_s8(a1)));
  acc = vpadalq_s16(acc, vmull_high_s8(w1, a1));
  return acc;
}

#include "quant/legacy_dot_neon_impl.h"

}  // namespace

const LegacyKernelSet& legacy_kernels_neon() {
  static const LegacyKernelSet k = [] {
    LegacyKernelSet s = legacy_kernels_scalar();
    s.dot[kQ8_0] = q8_0_tile;
    return s;
  }();
  return k;
}

}  // namespace oscar::quant
