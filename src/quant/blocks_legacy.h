// Block layouts of the ggml "legacy" 32-value formats, byte for byte as they
// appear in GGUF files (all little-endian, no padding), and the entry points
// of the per-ISA dot kernels of the legacy and float families.
//
//   Q4_0 (18 B): f16 d, 16 B nibbles.     x = d * (q - 8)
//   Q4_1 (20 B): f16 d, f16 m, 16 B.      x = d * q + m
//   Q5_0 (22 B): f16 d, u32 qh, 16 B.     x = d * (q - 16)
//   Q5_1 (24 B): f16 d, f16 m, u32 qh, 16 B. x = d * q + m
//   Q8_0 (34 B): f16 d, 32 x int8.        x = d * q
//   Q8_1 (36 B): f16 d, f16 s, 32 x int8. x = d * q, s = d * sum(q)
// Nibble order: byte j holds value j in its low nibble and value j + 16 in
// its high nibble. Q5 fifth bits: bit j of qh is bit 4 of value j.
#pragma once

#include <cstddef>
#include <cstdint>

#include "quant/quant.h"

namespace oscar::quant {

constexpr int kQK = 32;  // values per legacy block

struct BlockQ4_0 {
  uint16_t d;
  uint8_t qs[16];
};
struct BlockQ4_1 {
  uint16_t d, m;
  uint8_t qs[16];
};
struct BlockQ5_0 {
  uint16_t d;
  uint8_t qh[4];  // a byte array: the u32 sits at offset 2, unaligned
  uint8_t qs[16];
};
struct BlockQ5_1 {
  uint16_t d, m;
  uint8_t qh[4];
  uint8_t qs[16];
};
struct BlockQ8_0 {
  uint16_t d;
  int8_t qs[32];
};
struct BlockQ8_1 {
  uint16_t d, s;
  int8_t qs[32];
};
static_assert(sizeof(BlockQ4_0) == 18 && alignof(BlockQ4_0) == 2);
static_assert(sizeof(BlockQ4_1) == 20);
static_assert(sizeof(BlockQ5_0) == 22);
static_assert(sizeof(BlockQ5_1) == 24);
static_assert(sizeof(BlockQ8_0) == 34);
static_assert(sizeof(BlockQ8_1) == 36);

// The five legacy weight types, in the order the kernel tables below use.
enum LegacyKind { kQ4_0 = 0, kQ4_1, kQ5_0, kQ5_1, kQ8_0, kLegacyKinds };
// Float weight types (activations are f32 for all three).
enum FloatKind { kF32 = 0, kF16, kBF16, kFloatKinds };

// Per-ISA kernel tables, indexed by LegacyKind / FloatKind. An entry is null
// when the ISA file was not compiled (non-x86 builds). Callers must check the
// CPU before calling a SIMD kernel (tests and register_*_types do).
struct LegacyKernelSet {
  DotTileFn dot[kLegacyKinds];
};
struct FloatKernelSet {
  DotTileFn dot[kFloatKinds];
  PanelGemmFn panel[kFloatKinds];  // null in the scalar set
  int panel_cols;                  // NR of the panel kernels
};

#if defined(OSCAR_X86)
const LegacyKernelSet& legacy_kernels_avx2();
const LegacyKernelSet& legacy_kernels_avx512();
const LegacyKernelSet& legacy_kernels_avx512vnni();  // needs cpu.avx512vnni too
const FloatKernelSet& float_kernels_avx2();
const FloatKernelSet& float_kernels_avx512();
// F32 <-> F16 rows with the F16C instructions (any CPU of the AVX2 family):
// the KV cache converts every stored K and V row, which the scalar
// conversion made cost about 2 ns per value.
void quantize_f16_f16c(const float* src, void* dst, int64_t n);
void dequantize_f16_f16c(const void* src, float* dst, int64_t n);
#endif

#if defined(__aarch64__)
// AArch64: Q8_0 with plain NEON (legacy_dot_neon.cpp) and with the dot-product
// extension (legacy_dot_neondot.cpp; needs cpu.arm_dotprod); the other kinds
// are the scalar kernels.
const LegacyKernelSet& legacy_kernels_neon();
const LegacyKernelSet& legacy_kernels_neondot();
#endif

// Scalar references, exposed for the tests and as the fallback.
const LegacyKernelSet& legacy_kernels_scalar();
const FloatKernelSet& float_kernels_scalar();

}  // namespace oscar::quant
