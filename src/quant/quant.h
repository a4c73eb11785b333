// Weight formats: one row of traits per tensor type (llama.cpp-style type
// traits). A new type is one row plus its kernels.
//
// Dot products are computed between a weight row stored in type T and an
// activation row converted once to T's activation format (`act_type`: F32 for
// float weights, Q8_0 for the 32-blocks, Q8_K for the k-quants), so a GEMV
// quantizes the input vector once and reuses it for every row.
#pragma once

#include <cstddef>
#include <cstdint>

#include "core/cpu_features.h"
#include "core/tensor_type.h"

namespace oscar::quant {

// Decodes n values (n a multiple of the block size) of a row.
using DequantizeRowFn = void (*)(const void* src, float* dst, int64_t n);
// Encodes n values (n a multiple of the block size) into a row.
using QuantizeRowFn = void (*)(const float* src, void* dst, int64_t n);
// Dot products of a tile: out[r * out_stride + c] = dot(weight row r, act row c)
// for r < nr, c < nc. Rows are n values long; `w_stride` / `act_stride` are
// bytes between consecutive rows. nr and nc are between 1 and kMaxTile.
// Kernels may specialise small tiles (e.g. 4x1, 1x4, 4x4) to reuse loaded data.
using DotTileFn = void (*)(int64_t n, const void* w, size_t w_stride, int nr, const void* act,
                           size_t act_stride, int nc, float* out, size_t out_stride);

constexpr int kMaxTile = 8;

// Panel GEMM of float weights, used for products with many columns (prompt
// processing): for r < nr, c < n_cols
//   y[c * y_stride + r] = (accumulate ? y[c * y_stride + r] : 0) + sum_{i < kc} W_r[i] * x_c[i]
// `w` points at row 0 of the panel (already offset to the panel's first
// value), rows `w_stride` bytes apart. The activations are packed by
// pack_panel_act: the group of columns [g*NR, g*NR + NR) starts at
// xp + g * group_stride floats, k-major ([i][NR]), at the panel's first value.
// kc <= kPanelK, 1 <= nr <= kPanelRows.
using PanelGemmFn = void (*)(int64_t kc, const void* w, size_t w_stride, int nr, const float* xp,
                             size_t group_stride, int64_t n_cols, float* y, size_t y_stride,
                             bool accumulate);
constexpr int64_t kPanelK = 256;
constexpr int kPanelRows = 64;

// dst[i * nr_group + c] = x[c * x_stride + i] for i < k, c < nc; columns
// nc..nr_group-1 are zero. One column group in PanelGemmFn's layout.
void pack_panel_act(const float* x, size_t x_stride, int nc, int64_t k, int nr_group, float* dst);

// Order of the values inside an activation row of act_type. kPairedQ8K: the
// Q8_K chunks of 32 reordered for the AVX-512 Q4_K / Q5_K kernels
// (pair_q8_K_chunks in kquant_blocks.h). Rows of the same act_type but another
// order cannot be shared between weights.
enum class ActOrder : uint8_t { kNatural, kPairedQ8K };

struct QuantTraits {
  TensorType type;
  TensorType act_type;           // activation format the dot kernels expect
  ActOrder act_order = ActOrder::kNatural;
  DequantizeRowFn dequantize;    // scalar reference decoder
  QuantizeRowFn quantize;        // reference encoder of weights (tools, tests)
  QuantizeRowFn quantize_act;    // f32 activation row -> act_type row (may be SIMD)
  DotTileFn dot_ref;             // scalar reference dot (for tests), same act_order as dot
  DotTileFn dot;                 // fastest kernel for this CPU
  const char* dot_impl;          // name of the kernel chosen ("avx512vnni", "avx512", "avx2", "scalar")
  PanelGemmFn gemm_panel = nullptr;  // float weights on a SIMD CPU only; else matmul uses dot
  int gemm_panel_cols = 0;           // NR: columns per packed activation group
};

struct Rows16Kernels;  // quant/kquant_rows16.h

// The traits of every computable weight type, with `dot` chosen for `cpu`.
// Built once by the caller (e.g. at model load) and passed down.
class QuantTable {
 public:
  explicit QuantTable(const CpuFeatures& cpu);
  // Traits for t, or nullptr when t is not a computable weight type.
  const QuantTraits* find(TensorType t) const;
  // Same as find(), but throws Error naming `what` (e.g. a tensor name) and
  // the type when unsupported.
  const QuantTraits& get(TensorType t, const char* what = "tensor") const;
  // The kernels for matrices of type t repacked 16 rows at a time (Q4_K,
  // Q6_K), or nullptr where this CPU has none (then the loader leaves such
  // matrices as they are).
  const Rows16Kernels* rows16(TensorType t) const;
  // The features the table was built for: the layers above (attention, the
  // KV codecs) pick their kernels from them, so one table built at the edge
  // decides every kernel of a model (CpuFeatures{}: scalar everywhere).
  const CpuFeatures& cpu() const { return cpu_; }

 private:
  CpuFeatures cpu_;
  QuantTraits traits_[40] = {};
  bool present_[40] = {};
  const Rows16Kernels* rows16_[40] = {};
};

// Each family fills in its types. `cpu` selects the dot kernels; passing a
// default CpuFeatures{} selects the scalar reference everywhere.
void register_float_types(QuantTraits* table, bool* present, const CpuFeatures& cpu);
void register_legacy_types(QuantTraits* table, bool* present, const CpuFeatures& cpu);
void register_kquant_types(QuantTraits* table, bool* present, const CpuFeatures& cpu);

}  // namespace oscar::quant
