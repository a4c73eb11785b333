// The attention kernels of one CPU, in one table: the per-row kernels
// (row_kernels.h) for float and q2_0 rows, the integer q2_0 kernels, the
// softmax weights, and the heads-in-lanes prompt-tile kernels. Built from the
// CpuFeatures the caller was given (at the edge: detect_cpu(), through the
// model's QuantTable) and passed down to attend_fused and the row kernels;
// nothing below probes the CPU. CpuFeatures{} runs every path on scalar code,
// so two tables side by side in one process compare two ISAs.
#pragma once

#include "attention/row_kernels_impl.h"
#include "attention/tile_kernels.h"
#include "core/cpu_features.h"

namespace oscar::attention {

struct AttentionKernels {
  explicit AttentionKernels(const CpuFeatures& cpu = {});

  // SIMD sets for float (f16, f32) and q2_0 rows: `wide` where it takes the
  // shape, else `narrow`; neither: the generic decode-then-dot path.
  detail::RowKernels wide, narrow;
  detail::IntRowKernels integer;  // q2_0 scores and value sums by integer dot products
  // The prompt tiles' kernels (AVX-512), or null: prompts go through the
  // row kernels.
  const detail::TileKernels* tile = nullptr;
  const char* name = "scalar";  // the widest ISA chosen, for tests and reports
};

}  // namespace oscar::attention
