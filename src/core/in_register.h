// A vector kept in the register it was loaded into, for SIMD kernels that
// use one loaded chunk in several instructions.
//
// GCC folds a load into every instruction that uses the value (vpandd mem,
// vpsrlw mem, ...), so a chunk of quants used twice was read from L1 twice.
// The k-quant GEMVs are bound by their loads: loading each chunk of the
// rows16 Q4_K kernel once made it 25-29% faster from L2, and the q2_0
// value sums 4-7% (docs/decisions/0008-kquant-loads-in-registers.md). The empty asm hides where
// the value came from, so the compiler cannot fold the load again. Do not
// use it on a broadcast that feeds an embedded-broadcast operand ({1to16}):
// there the folded form is the cheap one (a register broadcast made the
// q2_0 value sums 1.6x slower).
#pragma once

namespace oscar {

// "v": any x86 vector register (xmm/ymm/zmm 0-31). The kernels that use it
// are x86 files; elsewhere the value passes through unchanged.
template <class Vec>
inline Vec in_register(Vec v) {
#if defined(__x86_64__) || defined(__i386__)
  asm("" : "+v"(v));
#endif
  return v;
}

}  // namespace oscar
