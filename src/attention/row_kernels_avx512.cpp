// The 8-wide row kernels (row_kernels_simd8.h) compiled for AVX-512VL: the
// same 256-bit operations, but 32 vector registers hold the accumulators
// of 8 query heads (x 2 rows or 2 chains), so a GQA-8 group unpacks each
// row once per pass and has enough independent FMA chains to hide latency.
#include "attention/row_kernels_simd8.h"

namespace oscar::attention::detail {

RowKernels avx512_row_kernels() { return simd8_kernels<8>(); }

}  // namespace oscar::attention::detail
