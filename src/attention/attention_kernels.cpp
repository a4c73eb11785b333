#include "attention/attention_kernels.h"

namespace oscar::attention {

AttentionKernels::AttentionKernels(const CpuFeatures& cpu) {
#if defined(OSCAR_X86)
  if (cpu.has_avx2_family()) {
    narrow = detail::avx2_row_kernels();
    name = "avx2";
    if (cpu.has_avx512_family()) {
      wide = detail::avx512_row_kernels();
      narrow = detail::avx512_narrow_row_kernels();
      tile = &detail::avx512_tile_kernels();
      name = "avx512";
      if (cpu.avx512vnni) {
        integer = detail::avx512vnni_row_kernels();
        name = "avx512vnni";
        if (cpu.avx512vbmi) integer.accumulate_q2 = detail::avx512vbmi_q2_accumulate_kernel();
        // The same sums on AMX tiles where the OS lets this process use
        // them (detect_cpu asks): 1.2-2.5x the AVX512-VNNI kernels' speed
        // on rows in L2, 1.1x in qwen3-4b decode at 16K
        // (docs/decisions/0004-integer-q2_0-kernels-and-amx.md).
        if (cpu.amx_int8 && cpu.gfni && cpu.avx512vbmi) integer = detail::amx_row_kernels(), name = "amx";
      }
    }
  }
#elif defined(__aarch64__)
  if (cpu.neon) wide = detail::neon_row_kernels(), name = "neon";
#else
  (void)cpu;
#endif
}

}  // namespace oscar::attention
