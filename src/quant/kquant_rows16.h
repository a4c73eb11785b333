// Q4_K weights repacked 16 rows at a time ("rows16"). The model loader
// repacks every Q4_K matrix that fits, in place, on CPUs with the AVX-512 VNNI
// kernel (model_loader.cpp), and kernels/matmul.cpp runs them through
// Rows16Kernels. bench/RESULTS.md, session 14, has the measurements.
//
// In the file's layout a GEMV spends most of its instructions per super-block
// and row on vpmaddubsw + vpmaddwd pairs, scale unpacking and a horizontal
// sum per row, and on this CPU it cannot keep up with memory. Here the
// super-blocks of 16 consecutive rows are interleaved so that the 16 rows sit
// in the 16 int32 lanes of a zmm register:
//   - byte i of the 12 packed scale bytes of the 16 rows is one 16-byte
//     vector, so the 6-bit scales and mins of a sub-block are unpacked for all
//     16 rows by a few xmm operations;
//   - the nibbles are interleaved 4 bytes per row: one 64-byte load holds, for
//     16 rows, 4 weights of an even sub-block (low nibbles) and the same 4
//     positions of the odd one (high nibbles), and each half is one vpdpbusd
//     against 4 activation bytes broadcast to all lanes;
//   - the result of a group is a register of 16 row totals: no horizontal sums.
// A group of 16 rows is exactly the bytes of those rows in the file (2304 per
// super-block), so a loaded matrix is repacked in place.
#pragma once

#include <cstddef>
#include <cstdint>

#include "core/cpu_features.h"
#include "quant/quant.h"

namespace oscar::quant {

constexpr int kRows16 = 16;

struct BlockQ4_Kx16 {
  uint16_t d[kRows16], dmin[kRows16];  // f16, per row
  uint8_t scales[12][kRows16];         // byte i of row r's 12 packed scale bytes
  // Chunk 8p + k (sub-block pair p, k < 8): bytes 4r .. 4r + 3 of row r hold
  // weights 64p + 4k + b in their low nibbles and 64p + 32 + 4k + b in their
  // high nibbles (b < 4), the same bytes as qs[32p + 4k + b] of the row's block.
  uint8_t qs[32][4 * kRows16];
};
static_assert(sizeof(BlockQ4_Kx16) == 16 * 144);  // 16 rows of BlockQ4_K

// Whether a rows x cols Q4_K matrix can be repacked (rows a multiple of 16,
// cols a multiple of 256).
bool q4_K_rows16_fits(int64_t rows, int64_t cols);
// Bytes of the repacked matrix.
size_t q4_K_rows16_bytes(int64_t rows, int64_t cols);
// src: rows Q4_K rows of row_bytes each (the file's layout); dst: the
// repacked matrix, group g (rows 16g .. 16g+15) at g * (cols / 256) blocks.
// Throws Error when the shape does not fit.
void repack_q4_K_rows16(const void* src, size_t row_bytes, int64_t rows, int64_t cols, void* dst);
// The inverse: the file's layout back, for tests and row lookups.
void unpack_q4_K_rows16(const void* src, int64_t rows, int64_t cols, void* dst, size_t row_bytes);
// Repacks a matrix stored in the file's layout (row_bytes = cols / 256 * 144)
// where it lies, one group at a time through a buffer of one group.
void repack_q4_K_rows16_in_place(void* data, int64_t rows, int64_t cols);

// out[16 (g - g0) + r] = dot of row 16g + r with the Q8_K activation row
// `act` (natural order, as quantize_q8_K writes it), for g0 <= g < g0 + n.
using Rows16GemvFn = void (*)(int64_t cols, const void* w, int64_t g0, int64_t n, const void* act, float* out);
// The scalar reference (any CPU), for tests.
void gemv_q4_K_rows16_ref(int64_t cols, const void* w, int64_t g0, int64_t n, const void* act, float* out);

// Group g (rows 16g .. 16g + 15) against nc activation columns, column c at
// act + c * act_stride bytes: out[c * out_stride + r]. Loads and splits the
// weights once per 4 columns.
using Rows16GemmFn = void (*)(int64_t cols, const void* w, int64_t g, const void* act, size_t act_stride,
                              int64_t nc, float* out, size_t out_stride);

// What a matmul over a repacked matrix needs (kernels/matmul.cpp): the GEMV,
// the GEMM tile and the encoder of its activations (Q8_K in the natural order).
struct Rows16Kernels {
  Rows16GemvFn gemv;
  Rows16GemmFn gemm;
  QuantizeRowFn quantize_act;
  const char* name;
};
// The kernels for this CPU, or nullptr where only the scalar reference
// exists: there a repacked matrix would be slower, so nothing is repacked.
const Rows16Kernels* q4_K_rows16_kernels(const CpuFeatures& cpu);

#if defined(OSCAR_X86)
void gemv_q4_K_rows16_avx512vnni(int64_t cols, const void* w, int64_t g0, int64_t n, const void* act, float* out);
void gemm_q4_K_rows16_avx512vnni(int64_t cols, const void* w, int64_t g, const void* act, size_t act_stride,
                                 int64_t nc, float* out, size_t out_stride);
#endif

}  // namespace oscar::quant
