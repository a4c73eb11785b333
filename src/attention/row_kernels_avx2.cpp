// The 8-wide row kernels (row_kernels_simd8.h) for AVX2 + FMA + F16C: 16
// vector registers, so up to 4 query heads per pass.
#include "attention/row_kernels_simd8.h"

namespace oscar::attention::detail {

RowKernels avx2_row_kernels() { return simd8_kernels<4>(); }

}  // namespace oscar::attention::detail
