#include "kernels/matmul.h"

#include <algorithm>
#include <atomic>

#include "core/error.h"

namespace oscar::kernels {

uint8_t* MatmulScratch::reserve(size_t bytes) {
  // 64 bytes of slack so the start can be cache-line aligned.
  if (buf_.size() < bytes + 64) buf_.resize(bytes + 64);
  auto p = reinterpret_cast<uintptr_t>(buf_.data());
  return reinterpret_cast<uint8_t*>((p + 63) & ~uintptr_t(63));
}

namespace {

// Columns per block: the activations of a block stay in L2 while every
// thread sweeps its rows over them.
constexpr int64_t kColBlock = 64;
// Rows per scheduling unit for decode: enough rows per task to amortise the
// call overhead, few enough to balance threads.
constexpr int64_t kRowTile = quant::kMaxTile;

}  // namespace

void matmul(const WeightMatrix& w, const float* x, size_t x_stride, int64_t n_cols, float* y,
            size_t y_stride, ThreadPool& pool, MatmulScratch& scratch) {
  const quant::QuantTraits& q = *w.traits;
  if (n_cols <= 0 || w.rows <= 0) return;
  const auto act_row = row_bytes(q.act_type, (uint64_t)w.cols);
  require(act_row.has_value(), "matmul: row length " + std::to_string(w.cols) +
                                   " is not a multiple of the block size of " +
                                   type_name(q.act_type));
  // Activation rows, padded to 64 bytes so rows start cache-aligned.
  const size_t act_stride = (*act_row + 63) & ~size_t(63);
  uint8_t* act = scratch.reserve(act_stride * (size_t)n_cols);

  pool.parallel_for((size_t)n_cols, 1, [&](size_t b, size_t e) {
    for (size_t c = b; c < e; ++c) q.quantize_act(x + c * x_stride, act + c * act_stride, w.cols);
  });

  const auto* wbytes = static_cast<const uint8_t*>(w.data);
  const int64_t n_row_tiles = (w.rows + kRowTile - 1) / kRowTile;

  // Row tiles are handed out from a shared counter in small chunks, so a
  // thread slowed by the machine's other load does not hold up the rest.
  const int64_t chunk = std::max<int64_t>(1, n_row_tiles / (8 * (int64_t)pool.size()));
  for (int64_t c0 = 0; c0 < n_cols; c0 += kColBlock) {
    const int64_t c1 = std::min(n_cols, c0 + kColBlock);
    std::atomic<int64_t> next{0};
    auto work = [&](int, int) {
      float tile[quant::kMaxTile * quant::kMaxTile];
      for (;;) {
        const int64_t tb = next.fetch_add(chunk, std::memory_order_relaxed);
        if (tb >= n_row_tiles) return;
        const int64_t te = std::min(n_row_tiles, tb + chunk);
        for (int64_t t = tb; t < te; ++t) {
          const int64_t r0 = t * kRowTile;
          const int nr = (int)std::min<int64_t>(kRowTile, w.rows - r0);
          for (int64_t c = c0; c < c1; c += quant::kMaxTile) {
            const int nc = (int)std::min<int64_t>(quant::kMaxTile, c1 - c);
            // tile[r * kMaxTile + j] = dot(row r0 + r, column c + j)
            q.dot(w.cols, wbytes + (size_t)r0 * w.row_bytes, w.row_bytes, nr, act + (size_t)c * act_stride,
                  act_stride, nc, tile, quant::kMaxTile);
            for (int j = 0; j < nc; ++j) {
              float* yc = y + (size_t)(c + j) * y_stride + r0;
              for (int r = 0; r < nr; ++r) yc[r] = tile[r * quant::kMaxTile + j];
            }
          }
        }
      }
    };
    if (n_row_tiles <= 1) work(0, 1);
    else pool.run(work);
  }
}

}  // namespace oscar::kernels
