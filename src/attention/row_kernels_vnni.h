// The one AVX512-VNNI step both integer q2_0 kernels are built on
// (row_kernels_avx512vnni.cpp, row_kernels_avx512vbmi.cpp; include only
// where AVX512-VNNI is enabled).
#pragma once

#include <immintrin.h>

#include <cstdint>

namespace oscar::attention::detail {
namespace {

// acc += codes . (the 4 signed bytes at w, in every lane). With the
// intrinsics GCC loads every broadcast into a register of its own first;
// the embedded broadcast makes it one instruction.
inline __m512i dpbusd_bcast(__m512i acc, __m512i codes, const int8_t* w) {
  asm("vpdpbusd %2%{1to16%}, %1, %0" : "+v"(acc) : "v"(codes), "m"(*reinterpret_cast<const int32_t*>(w)));
  return acc;
}

}  // namespace
}  // namespace oscar::attention::detail
