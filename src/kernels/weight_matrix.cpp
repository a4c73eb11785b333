#include "kernels/weight_matrix.h"

#include <vector>

namespace oscar::kernels {

void dequantize_row(const WeightMatrix& w, int64_t row, float* out) {
  if (!w.rows16) {
    w.traits->dequantize(static_cast<const uint8_t*>(w.data) + (size_t)row * w.row_bytes, out, w.cols);
    return;
  }
  // The row's blocks back in the file's layout, then the type's decoder: a
  // lookup is one row per token, so the copy costs nothing that matters.
  std::vector<uint8_t> blocks(w.row_bytes);
  quant::unpack_row_rows16(w.rows16->type, w.data, w.cols, row, blocks.data());
  w.traits->dequantize(blocks.data(), out, w.cols);
}

}  // namespace oscar::kernels
