// The row kernels (row_kernels_simd.h) for AVX2 + FMA + F16C: 8 floats per
// vector and 16 vector registers, so up to 4 query heads per pass.
#include "attention/row_kernels_simd.h"

namespace oscar::attention::detail {

RowKernels avx2_row_kernels() { return simd_kernels<Vec8, 4>(); }

}  // namespace oscar::attention::detail
