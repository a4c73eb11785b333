#include "core/cpu_features.h"

#if defined(__x86_64__) || defined(_M_X64)
#include <cpuid.h>
#include <cstdint>
#endif
#if defined(__linux__) && (defined(__x86_64__) || defined(_M_X64))
#include <sys/syscall.h>
#include <unistd.h>
#endif
#if defined(__aarch64__) && defined(__linux__)
#include <asm/hwcap.h>
#include <sys/auxv.h>
#elif defined(__aarch64__) && defined(__APPLE__)
#include <sys/sysctl.h>
#endif

namespace oscar {

#if defined(__x86_64__) || defined(_M_X64)
namespace {
uint64_t read_xcr0() {
  uint32_t eax, edx;
  __asm__ volatile("xgetbv" : "=a"(eax), "=d"(edx) : "c"(0));
  return ((uint64_t)edx << 32) | eax;
}

// Linux hands out the AMX tile state (8 KiB more per context switch) only to
// processes that ask for it; without that, the first tile instruction traps.
// Asking again after a grant is harmless.
bool tile_data_permitted() {
#if defined(__linux__)
  constexpr long kArchReqXcompPerm = 0x1023;
  constexpr long kXfeatureXtileData = 18;
  return syscall(SYS_arch_prctl, kArchReqXcompPerm, kXfeatureXtileData) == 0;
#else
  return false;
#endif
}
}  // namespace

CpuFeatures detect_cpu() {
  CpuFeatures f;
  unsigned a, b, c, d;
  if (!__get_cpuid(1, &a, &b, &c, &d)) return f;
  const bool osxsave = (c >> 27) & 1;
  const bool avx = (c >> 28) & 1;
  f.fma = (c >> 12) & 1;
  f.f16c = (c >> 29) & 1;
  uint64_t xcr0 = osxsave ? read_xcr0() : 0;
  const bool ymm_os = (xcr0 & 0x6) == 0x6;
  const bool zmm_os = (xcr0 & 0xe6) == 0xe6;
  if (!(avx && ymm_os)) {
    f.fma = f.f16c = false;
    return f;
  }
  if (__get_cpuid_count(7, 0, &a, &b, &c, &d)) {
    f.avx2 = (b >> 5) & 1;
    if (zmm_os) {
      f.avx512f = (b >> 16) & 1;
      f.avx512dq = (b >> 17) & 1;
      f.avx512bw = (b >> 30) & 1;
      f.avx512vl = (b >> 31) & 1;
      f.avx512vnni = (c >> 11) & 1;
      f.avx512vbmi = (c >> 1) & 1;
    }
    f.gfni = (c >> 8) & 1;
    // AMX-TILE (EDX bit 24) and AMX-INT8 (bit 25), with the OS saving the
    // tile configuration and data (XCR0 bits 17 and 18).
    const bool tiles_os = ((xcr0 >> 17) & 3) == 3;
    if (((d >> 24) & 1) && ((d >> 25) & 1) && tiles_os) f.amx_int8 = tile_data_permitted();
  }
  if (__get_cpuid_count(7, 1, &a, &b, &c, &d)) {
    f.avxvnni = (a >> 4) & 1;
    if (zmm_os) f.avx512bf16 = (a >> 5) & 1;
  }
  return f;
}
#elif defined(__aarch64__)
namespace {
#if defined(__APPLE__)
bool sysctl_flag(const char* name) {
  int v = 0;
  size_t n = sizeof v;
  return sysctlbyname(name, &v, &n, nullptr, 0) == 0 && v != 0;
}
#endif
}  // namespace

// What the kernel says the CPU has, not what the compiler targeted: the
// baseline build is plain ARMv8.0, and the dotprod kernels are compiled per
// file and called only where the CPU has them (an Apple M1 and a Cortex-A53
// run the same binary).
CpuFeatures detect_cpu() {
  CpuFeatures f;
  f.neon = true;  // Advanced SIMD is part of every AArch64 CPU
#if defined(__linux__)
  const unsigned long hw = getauxval(AT_HWCAP);
  f.arm_dotprod = (hw & HWCAP_ASIMDDP) != 0;
  f.arm_fp16 = (hw & HWCAP_FPHP) && (hw & HWCAP_ASIMDHP);
#elif defined(__APPLE__)
  f.arm_dotprod = sysctl_flag("hw.optional.arm.FEAT_DotProd");
  f.arm_fp16 = sysctl_flag("hw.optional.arm.FEAT_FP16");
#endif
  return f;
}
#else
CpuFeatures detect_cpu() { return {}; }  // scalar kernels only
#endif

std::string CpuFeatures::describe() const {
  std::string s;
  auto add = [&](bool on, const char* name) {
    if (!on) return;
    if (!s.empty()) s += ' ';
    s += name;
  };
  add(avx2, "avx2");
  add(fma, "fma");
  add(f16c, "f16c");
  add(avx512f, "avx512f");
  add(avx512bw, "avx512bw");
  add(avx512vl, "avx512vl");
  add(avx512dq, "avx512dq");
  add(avx512vnni, "avx512vnni");
  add(avx512vbmi, "avx512vbmi");
  add(avx512bf16, "avx512bf16");
  add(avxvnni, "avxvnni");
  add(gfni, "gfni");
  add(amx_int8, "amx-int8");
  add(neon, "neon");
  add(arm_dotprod, "dotprod");
  add(arm_fp16, "fp16");
  return s.empty() ? "scalar" : s;
}

}  // namespace oscar
