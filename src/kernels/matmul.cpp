#include "kernels/matmul.h"

#include <algorithm>
#include <atomic>

#include "core/error.h"
#include "kernels/tile_schedule.h"

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
// With many columns, the activations of one column block over one k panel
// should fit in a core's L2 next to the weight rows being swept; with long
// rows (9728 in ffn_down of Qwen3-4B) a whole column block does not, and
// every row tile would stream it again from L3 or DRAM.
constexpr size_t kPanelActBytes = 512u << 10;
// Panels start at multiples of this many values: every block size divides it.
constexpr int64_t kPanelAlign = 256;

// Length of the k panels for a product with n_cols columns (whole rows when
// the activations of a column block already fit, and always for a GEMV).
int64_t panel_length(const quant::QuantTraits& q, int64_t cols, int64_t n_cols) {
  if (n_cols <= 1) return cols;
  const int64_t block_cols = std::min<int64_t>(n_cols, kColBlock);
  const auto align_bytes = row_bytes(q.act_type, kPanelAlign);
  if (!align_bytes || *align_bytes == 0) return cols;
  const int64_t units = (int64_t)(kPanelActBytes / ((size_t)block_cols * *align_bytes));
  const int64_t len = std::max<int64_t>(1, units) * kPanelAlign;
  if (len >= cols) return cols;
  // Panels of (nearly) equal length, so the last one is not a sliver.
  const int64_t n_panels = (cols + len - 1) / len;
  const int64_t even = (cols + n_panels - 1) / n_panels;
  return (even + kPanelAlign - 1) / kPanelAlign * kPanelAlign;
}

// Bytes of one activation row of `cols` values in q's activation format.
size_t act_row_bytes(const quant::QuantTraits& q, int64_t cols) {
  const auto bytes = row_bytes(q.act_type, (uint64_t)cols);
  require(bytes.has_value(), [&] {
    return "matmul: row length " + std::to_string(cols) + " is not a multiple of the block size of " +
           type_name(q.act_type);
  });
  return *bytes;
}

// Chunks per thread for products with many columns (compute-bound): small
// chunks, so a thread slowed by the machine's other load does not hold up the
// rest. A GEMV streams its rows from memory, and every chunk boundary breaks
// a thread's stream (with 8 chunks per thread the layer GEMVs of qwen3-0.6b
// read 32-33 GB/s on 2 threads, with 2 chunks 41-44;
// docs/decisions/0010-gemv-streams-and-roofline-probe.md), so GEMVs use for_each_tile_streams instead.
constexpr int64_t kChunksPerThreadGemm = 8;

// Below this many columns the dot tiles win: packing a weight panel costs
// about as much as a few columns of FMAs.
constexpr int64_t kMinPanelCols = 8;
// Activations of one column block over one k panel (kPanelK values) stay in
// L2 while every row tile sweeps them.
constexpr size_t kPanelBlockBytes = 256u << 10;

// Float weights with many columns: the panel GEMM (quant::PanelGemmFn).
// Activations are packed once into groups of NR columns; then for each
// column block and k panel, the row tiles run in parallel, each packing its
// weights once for all the block's columns.
void matmul_panels(const WeightMatrix& w, const float* x, size_t x_stride, int64_t n_cols,
                   float* y, size_t y_stride, ThreadPool& pool, MatmulScratch& scratch) {
  const quant::QuantTraits& q = *w.traits;
  const int nr = q.gemm_panel_cols;
  const int64_t n_groups = (n_cols + nr - 1) / nr;
  const size_t group_stride = (size_t)w.cols * (size_t)nr;
  auto* xp = reinterpret_cast<float*>(scratch.reserve(group_stride * (size_t)n_groups * sizeof(float)));
  pool.parallel_for((size_t)n_groups, 1, [&](size_t b, size_t e) {
    for (size_t g = b; g < e; ++g) {
      const int nc = (int)std::min<int64_t>(nr, n_cols - (int64_t)g * nr);
      quant::pack_panel_act(x + g * (size_t)nr * x_stride, x_stride, nc, w.cols, nr, xp + g * group_stride);
    }
  });

  const auto* wbytes = static_cast<const uint8_t*>(w.data);
  const int64_t n_row_tiles = (w.rows + quant::kPanelRows - 1) / quant::kPanelRows;
  const int64_t block_groups =
      std::max<int64_t>(1, (int64_t)(kPanelBlockBytes / ((size_t)nr * quant::kPanelK * sizeof(float))));
  for (int64_t g0 = 0; g0 < n_groups; g0 += block_groups) {
    const int64_t c0 = g0 * nr;
    const int64_t cn = std::min(n_cols - c0, block_groups * nr);
    for (int64_t k0 = 0; k0 < w.cols; k0 += quant::kPanelK) {
      const int64_t kc = std::min(quant::kPanelK, w.cols - k0);
      const size_t w_off = *row_bytes(q.type, (uint64_t)k0);
      for_each_tile(pool, n_row_tiles, kChunksPerThreadGemm, [&](int64_t t) {
        const int64_t r0 = t * quant::kPanelRows;
        const int rn = (int)std::min<int64_t>(quant::kPanelRows, w.rows - r0);
        q.gemm_panel(kc, wbytes + (size_t)r0 * w.row_bytes + w_off, w.row_bytes, rn,
                     xp + (size_t)g0 * group_stride + (size_t)k0 * nr, group_stride, cn,
                     y + (size_t)c0 * y_stride + r0, y_stride, k0 > 0);
      });
    }
  }
}

// Activation bytes of one column block of a repacked-matrix GEMM.
constexpr size_t kRows16ActBlockBytes = 256u << 10;

// Bytes of one Q8_K activation row of a repacked matrix, padded to 64.
size_t rows16_act_bytes(int64_t cols) {
  return (*row_bytes(TensorType::Q8_K, (uint64_t)cols) + 63) & ~size_t(63);
}

// A matrix repacked 16 rows at a time: one tile is one group of 16 rows. With
// several columns the kernel loads and splits each weight chunk once for 4
// columns (quant/kquant_rows16.h, Rows16GemmFn).
void matmul_rows16(const WeightMatrix& w, const float* x, size_t x_stride, int64_t n_cols, float* y,
                   size_t y_stride, ThreadPool& pool, MatmulScratch& scratch) {
  const quant::Rows16Kernels& k = *w.rows16;
  const size_t act_stride = rows16_act_bytes(w.cols);
  uint8_t* act = scratch.reserve(act_stride * (size_t)n_cols);
  pool.parallel_for((size_t)n_cols, 1, [&](size_t b, size_t e) {
    for (size_t c = b; c < e; ++c) k.quantize_act(x + c * x_stride, act + c * act_stride, w.cols);
  });
  const int64_t n_groups = w.rows / quant::kRows16;
  if (n_cols == 1) {
    for_each_tile_streams(pool, n_groups, [&](int64_t g) { k.gemv(w.cols, w.data, g, 1, act, y + g * quant::kRows16); });
    return;
  }
  // Columns in blocks whose activations stay in L2 while a thread's groups
  // sweep them: all 512 columns of a 9728-wide product are 5.7 MiB, which
  // every group would otherwise stream again.
  const int64_t col_block = std::clamp<int64_t>((int64_t)(kRows16ActBlockBytes / act_stride), 8, 64);
  for (int64_t c0 = 0; c0 < n_cols; c0 += col_block) {
    const int64_t c1 = std::min(n_cols, c0 + col_block);
    for_each_tile(pool, n_groups, kChunksPerThreadGemm, [&](int64_t g) {
      k.gemm(w.cols, w.data, g, act + (size_t)c0 * act_stride, act_stride, c1 - c0,
             y + (size_t)c0 * y_stride + g * quant::kRows16, y_stride);
    });
  }
}

}  // namespace

void matmul(const WeightMatrix& w, const float* x, size_t x_stride, int64_t n_cols, float* y,
            size_t y_stride, ThreadPool& pool, MatmulScratch& scratch) {
  const quant::QuantTraits& q = *w.traits;
  if (n_cols <= 0 || w.rows <= 0) return;
  if (w.rows16) {
    matmul_rows16(w, x, x_stride, n_cols, y, y_stride, pool, scratch);
    return;
  }
  if (q.gemm_panel && n_cols >= kMinPanelCols) {
    matmul_panels(w, x, x_stride, n_cols, y, y_stride, pool, scratch);
    return;
  }
  // Activation rows, padded to 64 bytes so rows start cache-aligned.
  const size_t act_stride = (act_row_bytes(q, w.cols) + 63) & ~size_t(63);
  uint8_t* act = scratch.reserve(act_stride * (size_t)n_cols);

  pool.parallel_for((size_t)n_cols, 1, [&](size_t b, size_t e) {
    for (size_t c = b; c < e; ++c) q.quantize_act(x + c * x_stride, act + c * act_stride, w.cols);
  });

  const auto* wbytes = static_cast<const uint8_t*>(w.data);
  const int64_t n_row_tiles = (w.rows + kRowTile - 1) / kRowTile;
  const int64_t kc = panel_length(q, w.cols, n_cols);
  for (int64_t c0 = 0; c0 < n_cols; c0 += kColBlock) {
    const int64_t c1 = std::min(n_cols, c0 + kColBlock);
    for (int64_t k0 = 0; k0 < w.cols; k0 += kc) {
      // Byte offsets of the panel inside a weight row and an activation row
      // (k0 is a multiple of kPanelAlign, so of every block size).
      const int64_t klen = std::min(kc, w.cols - k0);
      const size_t w_off = *row_bytes(q.type, (uint64_t)k0);
      const size_t a_off = *row_bytes(q.act_type, (uint64_t)k0);
      const bool first = k0 == 0;
      const auto row_tile = [&](int64_t t) {
        float tile[quant::kMaxTile * quant::kMaxTile];
        const int64_t r0 = t * kRowTile;
        const int nr = (int)std::min<int64_t>(kRowTile, w.rows - r0);
        for (int64_t c = c0; c < c1; c += quant::kMaxTile) {
          const int nc = (int)std::min<int64_t>(quant::kMaxTile, c1 - c);
          // tile[r * kMaxTile + j] = dot of row r0 + r and column c + j over the panel
          q.dot(klen, wbytes + (size_t)r0 * w.row_bytes + w_off, w.row_bytes, nr,
                act + (size_t)c * act_stride + a_off, act_stride, nc, tile, quant::kMaxTile);
          for (int j = 0; j < nc; ++j) {
            float* yc = y + (size_t)(c + j) * y_stride + r0;
            if (first)
              for (int r = 0; r < nr; ++r) yc[r] = tile[r * quant::kMaxTile + j];
            else
              for (int r = 0; r < nr; ++r) yc[r] += tile[r * quant::kMaxTile + j];
          }
        }
      };
      if (n_cols == 1) for_each_tile_streams(pool, n_row_tiles, row_tile);
      else for_each_tile(pool, n_row_tiles, kChunksPerThreadGemm, row_tile);
    }
  }
}

void matmul_shared_input(const MatmulOutput* outs, int n_outs, const float* x, size_t x_stride,
                         int64_t n_cols, ThreadPool& pool, MatmulScratch& scratch, const RegionTail* tail) {
  constexpr int kMaxOutputs = 4;
  // A repacked matrix takes Q8_K in the natural order, like the file-layout
  // kernels of Q6_K (Q/K/V of a q4_k_m model mix Q4_K and Q6_K).
  const auto act_format = [](const WeightMatrix& w) {
    return w.rows16 ? std::pair(TensorType::Q8_K, quant::ActOrder::kNatural)
                    : std::pair(w.traits->act_type, w.traits->act_order);
  };
  bool shared = n_cols == 1 && n_outs >= 1 && n_outs <= kMaxOutputs;
  for (int i = 1; shared && i < n_outs; ++i)
    shared = act_format(*outs[i].w) == act_format(*outs[0].w) && outs[i].w->cols == outs[0].w->cols;
  if (!shared) {
    for (int i = 0; i < n_outs; ++i) matmul(*outs[i].w, x, x_stride, n_cols, outs[i].y, outs[i].y_stride, pool, scratch);
    if (tail && n_cols > 0) run_tail(pool, *tail);
    return;
  }
  const WeightMatrix& w0 = *outs[0].w;
  const size_t act_row = w0.rows16 ? rows16_act_bytes(w0.cols) : act_row_bytes(*w0.traits, w0.cols);
  uint8_t* act = scratch.reserve(act_row);
  if (w0.rows16) w0.rows16->quantize_act(x, act, w0.cols);
  else w0.traits->quantize_act(x, act, w0.cols);

  // Row tiles of all outputs numbered one after another (a repacked matrix's
  // tiles are its groups of 16 rows).
  int64_t first_tile[kMaxOutputs + 1] = {0};
  for (int i = 0; i < n_outs; ++i) {
    const WeightMatrix& w = *outs[i].w;
    first_tile[i + 1] = first_tile[i] + (w.rows16 ? w.rows / quant::kRows16 : (w.rows + kRowTile - 1) / kRowTile);
  }
  for_each_tile_streams(pool, first_tile[n_outs], [&](int64_t t) {
    int m = 0;
    while (t >= first_tile[m + 1]) ++m;
    const WeightMatrix& w = *outs[m].w;
    if (w.rows16) {
      const int64_t g = t - first_tile[m];
      w.rows16->gemv(w.cols, w.data, g, 1, act, outs[m].y + g * quant::kRows16);
      return;
    }
    const int64_t r0 = (t - first_tile[m]) * kRowTile;
    const int nr = (int)std::min<int64_t>(kRowTile, w.rows - r0);
    float tile[quant::kMaxTile * quant::kMaxTile];
    w.traits->dot(w.cols, static_cast<const uint8_t*>(w.data) + (size_t)r0 * w.row_bytes, w.row_bytes, nr, act,
                  act_row, 1, tile, quant::kMaxTile);
    for (int r = 0; r < nr; ++r) outs[m].y[r0 + r] = tile[r * quant::kMaxTile];
  }, tail);
}

}  // namespace oscar::kernels
