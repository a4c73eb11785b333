// A weight matrix as the kernels see it, and the one way to read a row of it
// back (an embedding lookup), whatever its layout.
#pragma once

#include <cstddef>
#include <cstdint>

#include "quant/kquant_rows16.h"
#include "quant/quant.h"

namespace oscar::kernels {

// A weight matrix used in place (usually inside the loaded GGUF): `rows` rows
// of `cols` values, each row `row_bytes` long, in the format of `traits`.
struct WeightMatrix {
  const quant::QuantTraits* traits = nullptr;
  const void* data = nullptr;
  int64_t rows = 0;
  int64_t cols = 0;
  size_t row_bytes = 0;
  // Set when the loader repacked the rows 16 at a time (Q4_K, Q6_K:
  // quant/kquant_rows16.h): products then go through these kernels, and the
  // bytes are no longer rows of row_bytes (read rows with dequantize_row).
  const quant::Rows16Kernels* rows16 = nullptr;
};

// Row `row` of w as cols floats (an embedding lookup), from the file's layout
// or from a repacked one (a tied output table is repacked).
void dequantize_row(const WeightMatrix& w, int64_t row, float* out);

}  // namespace oscar::kernels
