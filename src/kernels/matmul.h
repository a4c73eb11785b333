// Matrix products of a quantized weight matrix with f32 activations, on the
// shared thread pool. One entry point serves decode (one column: GEMV) and
// prompt processing (many columns: GEMM); the per-type tile kernels come from
// the quant table, chosen at run time for the CPU.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

#include "core/thread_pool.h"
#include "kernels/tile_schedule.h"
#include "kernels/weight_matrix.h"

namespace oscar::kernels {

// Scratch memory reused across calls, so a decode step allocates nothing.
// One per caller thread of matmul (a session owns one).
class MatmulScratch {
 public:
  uint8_t* reserve(size_t bytes);

 private:
  std::vector<uint8_t> buf_;
};

// y[c][r] = sum_k W[r][k] * x[c][k] for c < n_cols, r < W.rows.
//   x: (n_cols, W.cols) f32, row-major, rows `x_stride` floats apart
//   y: (n_cols, W.rows) f32, row-major, rows `y_stride` floats apart
// The activations are converted once to the weight type's activation format.
void matmul(const WeightMatrix& w, const float* x, size_t x_stride, int64_t n_cols, float* y,
            size_t y_stride, ThreadPool& pool, MatmulScratch& scratch);

// One product of several that read the same input: y = W x, rows of y
// `y_stride` floats apart.
struct MatmulOutput {
  const WeightMatrix* w = nullptr;
  float* y = nullptr;
  size_t y_stride = 0;
};

// The products of several matrices with one input (Q/K/V, gate/up). For one
// column (decode) whose matrices share an activation format and row length,
// the input is converted once and the row tiles of every matrix run in one
// parallel region: a decode step then waits for its threads fewer times.
// Otherwise it is one matmul per output.
// A tail (tile_schedule.h), when given, runs on every thread once all the
// products are complete: in the same region for one column, as a region of
// its own otherwise.
void matmul_shared_input(const MatmulOutput* outs, int n_outs, const float* x, size_t x_stride,
                         int64_t n_cols, ThreadPool& pool, MatmulScratch& scratch,
                         const RegionTail* tail = nullptr);

// Convenience for a single column (decode).
inline void gemv(const WeightMatrix& w, const float* x, float* y, ThreadPool& pool,
                 MatmulScratch& scratch) {
  matmul(w, x, (size_t)w.cols, 1, y, (size_t)w.rows, pool, scratch);
}

}  // namespace oscar::kernels
