// K-quant weights repacked 16 rows at a time ("rows16"): Q4_K and Q6_K. The
// model loader repacks every such matrix that fits, in place, where
// rows16_kernels has kernels for its type (AVX-512 VNNI: both; AVX2 only:
// Q4_K), and kernels/matmul.cpp runs them through Rows16Kernels.
// docs/decisions/0007-rows16-repacks.md has the reasons and measurements.
//
// In the file's layout a GEMV spends most of its instructions per super-block
// and row on vpmaddubsw + vpmaddwd pairs, scale unpacking and a horizontal
// sum per row, and on this CPU it cannot keep up with memory. Here the
// super-blocks of 16 consecutive rows are interleaved so that the 16 rows sit
// in the 16 int32 lanes of a zmm register:
//   - the scales of a sub-block for the 16 rows are one 16-byte vector, so
//     they are unpacked (Q4_K's 6-bit packing) or widened for all 16 rows by
//     a few xmm operations;
//   - the quants are interleaved 4 bytes per row: one 64-byte load holds 4
//     byte positions of 16 rows, and each set of 4 weights in them (a nibble,
//     or for Q6_K a nibble joined with its 2 high bits) is one vpdpbusd
//     against 4 activation bytes broadcast to all lanes;
//   - the result of a group is a register of 16 row totals: no horizontal sums.
// A group of 16 rows is exactly the bytes of those rows in the file (16
// blocks per super-block column), so a loaded matrix is repacked in place,
// and one row can be unpacked again for a lookup (a tied embedding table).
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

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

struct BlockQ6_Kx16 {
  int8_t scales[16][kRows16];  // scales[s][r]: sub-block s of row r
  // Chunk c of ql (c < 32) or qh (c < 16): bytes 4r .. 4r + 3 of row r are
  // ql[4c .. 4c + 3] (qh[4c .. 4c + 3]) of the row's block. With h = c / 16
  // (c / 8 for qh) and positions l = 4 (c % 8) + b, a ql chunk c holds
  // weights 128h + l (c % 16 < 8) or 128h + 32 + l (c % 16 >= 8) in its low
  // nibbles and those + 64 in its high nibbles; bits 2j..2j+1 of qh chunk
  // 8h + c % 8 are the high bits of weight 128h + 32j + l (kquant_blocks.h).
  //
  // The three chunks that make up the same 16 x 4 positions lie side by
  // side, in the order the kernels read them: triple t = 8h + k holds ql
  // chunks 16h + k and 16h + 8 + k, then qh chunk t. The group is then read
  // front to back, so prefetching the next group in step with the current
  // one keeps every line the same distance ahead. With ql and qh apart, the
  // qh lines were asked for only a few chunks before use: from memory
  // about 5% slower with 2 threads (docs/decisions/0007-rows16-repacks.md).
  uint8_t triples[16][3][4 * kRows16];
  uint16_t d[kRows16];  // f16, per row; last, so that a group at a 64-byte
                        // boundary has its quants at one too

  const uint8_t* ql(int c) const { return triples[8 * (c / 16) + c % 8][c % 16 / 8]; }
  uint8_t* ql(int c) { return triples[8 * (c / 16) + c % 8][c % 16 / 8]; }
  const uint8_t* qh(int c) const { return triples[c][2]; }
  uint8_t* qh(int c) { return triples[c][2]; }
};
static_assert(sizeof(BlockQ6_Kx16) == 16 * 210);  // 16 rows of BlockQ6_K

// Whether t has a rows16 layout (Q4_K, Q6_K) and a rows x cols matrix of it
// can be repacked (rows a multiple of 16, cols a multiple of 256).
bool rows16_fits(TensorType t, int64_t rows, int64_t cols);
// src: rows rows of row_bytes each (the file's layout); dst: the repacked
// matrix, of the same size, group g (rows 16g .. 16g+15) at g * 16 *
// (cols / 256) blocks. Throws Error when the type or shape does not fit.
void repack_rows16(TensorType t, const void* src, size_t row_bytes, int64_t rows, int64_t cols, void* dst);
// The inverse: the file's layout back, for tests.
void unpack_rows16(TensorType t, const void* src, int64_t rows, int64_t cols, void* dst, size_t row_bytes);
// Repacks a matrix stored in the file's layout where it lies, one group at a
// time through a buffer of one group.
void repack_rows16_in_place(TensorType t, void* data, int64_t rows, int64_t cols);
// Row `row` of a repacked matrix in the file's layout (cols / 256 blocks at
// dst): the lookup of a repacked embedding table.
void unpack_row_rows16(TensorType t, const void* data, int64_t cols, int64_t row, void* dst);

// out[16 (g - g0) + r] = dot of row 16g + r with the Q8_K activation row
// `act` (natural order, as quantize_q8_K writes it), for g0 <= g < g0 + n.
using Rows16GemvFn = void (*)(int64_t cols, const void* w, int64_t g0, int64_t n, const void* act, float* out);
// The scalar references (any CPU), for tests.
void gemv_q4_K_rows16_ref(int64_t cols, const void* w, int64_t g0, int64_t n, const void* act, float* out);
void gemv_q6_K_rows16_ref(int64_t cols, const void* w, int64_t g0, int64_t n, const void* act, float* out);

// Group g (rows 16g .. 16g + 15) against nc activation columns, column c at
// act + c * act_stride bytes: out[c * out_stride + r]. Loads and splits the
// weights once per few columns.
using Rows16GemmFn = void (*)(int64_t cols, const void* w, int64_t g, const void* act, size_t act_stride,
                              int64_t nc, float* out, size_t out_stride);

// What a matmul over a repacked matrix needs (kernels/matmul.cpp): the GEMV,
// the GEMM tile and the encoder of its activations (Q8_K in the natural order).
struct Rows16Kernels {
  TensorType type;
  Rows16GemvFn gemv;
  Rows16GemmFn gemm;
  QuantizeRowFn quantize_act;
  const char* name;
  // Whether a matrix repacked for these kernels decodes faster than the
  // file's layout does with the same CPU's kernels (not so for
  // Q6_K with AVX2 only: docs/decisions/0007-rows16-repacks.md).
  bool beats_file_layout;
};
// The fastest kernels of type t for this CPU when they beat the file's
// layout, else nullptr (no rows16 layout, only the scalar reference, or Q6_K
// with AVX2 only): then nothing of type t is repacked.
const Rows16Kernels* rows16_kernels(TensorType t, const CpuFeatures& cpu);

// Every kernel set of type t this CPU can run, fastest first (tests compare
// each against the scalar reference; rows16_kernels picks one).
std::vector<const Rows16Kernels*> rows16_kernel_variants(TensorType t, const CpuFeatures& cpu);

#if defined(OSCAR_X86)
void gemv_q4_K_rows16_avx2(int64_t cols, const void* w, int64_t g0, int64_t n, const void* act, float* out);
void gemm_q4_K_rows16_avx2(int64_t cols, const void* w, int64_t g, const void* act, size_t act_stride, int64_t nc,
                           float* out, size_t out_stride);
void gemv_q6_K_rows16_avx2(int64_t cols, const void* w, int64_t g0, int64_t n, const void* act, float* out);
void gemm_q6_K_rows16_avx2(int64_t cols, const void* w, int64_t g, const void* act, size_t act_stride, int64_t nc,
                           float* out, size_t out_stride);
void gemv_q4_K_rows16_avx512vnni(int64_t cols, const void* w, int64_t g0, int64_t n, const void* act, float* out);
void gemm_q4_K_rows16_avx512vnni(int64_t cols, const void* w, int64_t g, const void* act, size_t act_stride,
                                 int64_t nc, float* out, size_t out_stride);
void gemv_q6_K_rows16_avx512vnni(int64_t cols, const void* w, int64_t g0, int64_t n, const void* act, float* out);
void gemm_q6_K_rows16_avx512vnni(int64_t cols, const void* w, int64_t g, const void* act, size_t act_stride,
                                 int64_t nc, float* out, size_t out_stride);
#endif

}  // namespace oscar::quant
