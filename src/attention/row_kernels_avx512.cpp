// The row kernels (row_kernels_simd.h) for AVX-512 F/BW/VL/DQ. 32 vector
// registers hold the accumulators of 8 query heads (x 2 rows or 2 chains),
// so a GQA-8 group unpacks each row once per pass and has enough independent
// FMA chains to hide their latency. The main set works on 16 floats per
// vector; the 8-wide set takes the shapes it cannot (head dims that are not
// a multiple of 16, q2 groups of 32).
// GCC 12 warns falsely about the _mm512_undefined_* placeholders inside the
// AVX-512 intrinsics (-Wmaybe-uninitialized, and -Wuninitialized in the
// _mm512_reduce_* helpers; GCC bug 105593).
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#pragma GCC diagnostic ignored "-Wuninitialized"
#endif
#include "attention/row_kernels_simd.h"
#include "attention/row_kernels_vec16.h"

namespace oscar::attention::detail {

RowKernels avx512_row_kernels() { return simd_kernels<Vec16, 8>(); }
RowKernels avx512_narrow_row_kernels() { return simd_kernels<Vec8, 8>(); }

}  // namespace oscar::attention::detail
