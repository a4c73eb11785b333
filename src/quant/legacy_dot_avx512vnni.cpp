// The AVX-512 legacy kernels with VNNI's vpdpbusd for the u8 x s8 -> int32
// step (one instruction instead of vpmaddubsw + vpmaddwd).
#define OSCAR_LEGACY_VNNI 1
#include "legacy_dot_avx512.cpp"
