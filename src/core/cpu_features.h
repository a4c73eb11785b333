// What the CPU we run on can do. Read once at startup (detect_cpu()) and passed
// to kernel dispatch; kernels never probe the CPU themselves.
#pragma once

#include <string>

namespace oscar {

struct CpuFeatures {
  bool avx2 = false;
  bool fma = false;
  bool f16c = false;
  bool avx512f = false;
  bool avx512bw = false;
  bool avx512vl = false;
  bool avx512dq = false;
  bool avx512vnni = false;
  bool avx512vbmi = false;
  bool avx512bf16 = false;
  bool avxvnni = false;
  bool gfni = false;
  // AMX tiles with INT8 products, usable by this process: the CPU has them,
  // the OS saves the tile state, and (Linux) granted the permission to use
  // it, which detect_cpu() requests.
  bool amx_int8 = false;
  // AArch64: Advanced SIMD (always there), the dot-product extension
  // (SDOT/UDOT, ARMv8.2+, FEAT_DotProd) and half-precision arithmetic
  // (FEAT_FP16), from the kernel's hwcaps (Linux) or sysctl (macOS).
  bool neon = false;
  bool arm_dotprod = false;
  bool arm_fp16 = false;

  // The combinations our SIMD kernel families require.
  bool has_avx2_family() const { return avx2 && fma && f16c; }
  bool has_avx512_family() const {
    return has_avx2_family() && avx512f && avx512bw && avx512vl && avx512dq;
  }
  std::string describe() const;
};

// Probes the CPU (cpuid + xgetbv on x86, hwcaps or sysctl on AArch64).
CpuFeatures detect_cpu();

}  // namespace oscar
