#include "quant/kquant_rows16.h"

#include <cstring>
#include <string>
#include <vector>

#include "core/error.h"
#include "core/fp16.h"
#include "quant/kquant_blocks.h"

namespace oscar::quant {

namespace {

// Where each byte of a row's block goes in its group, per type: pack copies
// row r's block into the group, unpack copies it back.
struct Q4KLayout {
  using Block = BlockQ4_K;
  using Group = BlockQ4_Kx16;
  static void pack(const Block& b, int r, Group& o) {
    o.d[r] = b.d;
    o.dmin[r] = b.dmin;
    for (int i = 0; i < 12; ++i) o.scales[i][r] = b.scales[i];
    for (int c = 0; c < 32; ++c) std::memcpy(&o.qs[c][4 * r], &b.qs[4 * c], 4);
  }
  static void unpack(const Group& p, int r, Block& b) {
    b.d = p.d[r];
    b.dmin = p.dmin[r];
    for (int i = 0; i < 12; ++i) b.scales[i] = p.scales[i][r];
    for (int c = 0; c < 32; ++c) std::memcpy(&b.qs[4 * c], &p.qs[c][4 * r], 4);
  }
};

struct Q6KLayout {
  using Block = BlockQ6_K;
  using Group = BlockQ6_Kx16;
  static void pack(const Block& b, int r, Group& o) {
    o.d[r] = b.d;
    for (int s = 0; s < 16; ++s) o.scales[s][r] = b.scales[s];
    for (int c = 0; c < 32; ++c) std::memcpy(o.ql(c) + 4 * r, &b.ql[4 * c], 4);
    for (int c = 0; c < 16; ++c) std::memcpy(o.qh(c) + 4 * r, &b.qh[4 * c], 4);
  }
  static void unpack(const Group& p, int r, Block& b) {
    b.d = p.d[r];
    for (int s = 0; s < 16; ++s) b.scales[s] = p.scales[s][r];
    for (int c = 0; c < 32; ++c) std::memcpy(&b.ql[4 * c], p.ql(c) + 4 * r, 4);
    for (int c = 0; c < 16; ++c) std::memcpy(&b.qh[4 * c], p.qh(c) + 4 * r, 4);
  }
};
static_assert(sizeof(Q4KLayout::Group) == kRows16 * sizeof(Q4KLayout::Block));
static_assert(sizeof(Q6KLayout::Group) == kRows16 * sizeof(Q6KLayout::Block));

bool has_layout(TensorType t) { return t == TensorType::Q4_K || t == TensorType::Q6_K; }

// Calls f with the layout of t (Q4_K or Q6_K; the callers checked).
template <class F>
void with_layout(TensorType t, F&& f) {
  if (t == TensorType::Q4_K) f(Q4KLayout{});
  else f(Q6KLayout{});
}

void require_fits(TensorType t, int64_t rows, int64_t cols, const char* what) {
  require(rows16_fits(t, rows, cols), [&] {
    return std::string("rows16 ") + what + ": a " + std::to_string(rows) + " x " + std::to_string(cols) + " " +
           type_name(t) + " matrix " +
           (has_layout(t) ? "needs rows a multiple of 16 and columns a multiple of 256" : "has no rows16 layout");
  });
}

template <class L>
void repack(const void* src, size_t row_bytes, int64_t rows, int64_t cols, void* dst) {
  const int64_t nb = cols / kQK_K;
  auto* out = static_cast<typename L::Group*>(dst);
  for (int64_t g = 0; g < rows / kRows16; ++g)
    for (int64_t ib = 0; ib < nb; ++ib)
      for (int r = 0; r < kRows16; ++r) {
        const auto* row = static_cast<const uint8_t*>(src) + (size_t)(g * kRows16 + r) * row_bytes;
        L::pack(reinterpret_cast<const typename L::Block*>(row)[ib], r, out[g * nb + ib]);
      }
}

template <class L>
void unpack_row(const void* src, int64_t cols, int64_t row, void* dst) {
  const int64_t nb = cols / kQK_K;
  const auto* group = static_cast<const typename L::Group*>(src) + (row / kRows16) * nb;
  auto* blocks = static_cast<typename L::Block*>(dst);
  for (int64_t ib = 0; ib < nb; ++ib) L::unpack(group[ib], (int)(row % kRows16), blocks[ib]);
}

}  // namespace

bool rows16_fits(TensorType t, int64_t rows, int64_t cols) {
  return has_layout(t) && rows > 0 && cols > 0 && rows % kRows16 == 0 && cols % kQK_K == 0;
}

void repack_rows16(TensorType t, const void* src, size_t row_bytes, int64_t rows, int64_t cols, void* dst) {
  require_fits(t, rows, cols, "repack");
  with_layout(t, [&](auto layout) { repack<decltype(layout)>(src, row_bytes, rows, cols, dst); });
}

void unpack_rows16(TensorType t, const void* src, int64_t rows, int64_t cols, void* dst, size_t row_bytes) {
  require_fits(t, rows, cols, "unpack");
  with_layout(t, [&](auto layout) {
    for (int64_t r = 0; r < rows; ++r)
      unpack_row<decltype(layout)>(src, cols, r, static_cast<uint8_t*>(dst) + (size_t)r * row_bytes);
  });
}

void repack_rows16_in_place(TensorType t, void* data, int64_t rows, int64_t cols) {
  require_fits(t, rows, cols, "repack");
  const size_t rb = *row_bytes(t, (uint64_t)cols);
  const size_t group_bytes = kRows16 * rb;
  std::vector<uint8_t> rows_of_group(group_bytes);
  for (int64_t g = 0; g < rows / kRows16; ++g) {
    uint8_t* at = static_cast<uint8_t*>(data) + (size_t)g * group_bytes;
    std::memcpy(rows_of_group.data(), at, group_bytes);
    repack_rows16(t, rows_of_group.data(), rb, kRows16, cols, at);
  }
}

void unpack_row_rows16(TensorType t, const void* data, int64_t cols, int64_t row, void* dst) {
  require(has_layout(t) && cols % kQK_K == 0 && row >= 0, "rows16 row lookup: not a rows16 matrix row");
  with_layout(t, [&](auto layout) { unpack_row<decltype(layout)>(data, cols, row, dst); });
}

void gemv_q4_K_rows16_ref(int64_t cols, const void* w, int64_t g0, int64_t n, const void* act, float* out) {
  const int64_t nb = cols / kQK_K;
  const auto* groups = static_cast<const BlockQ4_Kx16*>(w);
  const auto* a = static_cast<const BlockQ8_K*>(act);
  for (int64_t g = g0; g < g0 + n; ++g)
    for (int r = 0; r < kRows16; ++r) {
      float acc = 0;
      for (int64_t ib = 0; ib < nb; ++ib) {
        const BlockQ4_Kx16& p = groups[g * nb + ib];
        uint8_t packed[12], sc[8], mn[8];
        for (int i = 0; i < 12; ++i) packed[i] = p.scales[i][r];
        kq_unpack_scales_k4(packed, sc, mn);
        int32_t sum = 0, bias = 0;
        for (int j = 0; j < 8; ++j) {
          // Sub-block j: pair j / 2, low nibbles if j is even.
          int32_t s = 0;
          for (int k = 0; k < 8; ++k)
            for (int b = 0; b < 4; ++b) {
              const uint8_t byte = p.qs[8 * (j / 2) + k][4 * r + b];
              const int u = j % 2 ? byte >> 4 : byte & 15;
              s += u * a[ib].qs[32 * j + 4 * k + b];
            }
          sum += sc[j] * s;
          bias += mn[j] * (a[ib].bsums[2 * j] + a[ib].bsums[2 * j + 1]);
        }
        acc += a[ib].d * (fp16_to_f32(p.d[r]) * (float)sum - fp16_to_f32(p.dmin[r]) * (float)bias);
      }
      out[(g - g0) * kRows16 + r] = acc;
    }
}

void gemv_q6_K_rows16_ref(int64_t cols, const void* w, int64_t g0, int64_t n, const void* act, float* out) {
  const int64_t nb = cols / kQK_K;
  const auto* groups = static_cast<const BlockQ6_Kx16*>(w);
  const auto* a = static_cast<const BlockQ8_K*>(act);
  for (int64_t g = g0; g < g0 + n; ++g)
    for (int r = 0; r < kRows16; ++r) {
      float acc = 0;
      for (int64_t ib = 0; ib < nb; ++ib) {
        const BlockQ6_Kx16& p = groups[g * nb + ib];
        int32_t sum = 0;
        for (int s = 0; s < 16; ++s) {
          int32_t dot = 0;
          for (int i = 16 * s; i < 16 * s + 16; ++i) {
            // Weight i = 128h + 32j + l (kquant_blocks.h): ql byte 64h + 32 (j % 2) + l,
            // high nibble when j >= 2; qh byte 32h + l, bits 2j..2j+1.
            const int h = i / 128, j = i % 128 / 32, l = i % 32;
            const int qlb = 64 * h + 32 * (j % 2) + l, qhb = 32 * h + l;
            const uint8_t lo = p.ql(qlb / 4)[4 * r + qlb % 4], hi = p.qh(qhb / 4)[4 * r + qhb % 4];
            const int q = ((j >= 2 ? lo >> 4 : lo & 15) | ((hi >> (2 * j)) & 3) << 4) - 32;
            dot += q * a[ib].qs[i];
          }
          sum += p.scales[s][r] * dot;
        }
        acc += a[ib].d * fp16_to_f32(p.d[r]) * (float)sum;
      }
      out[(g - g0) * kRows16 + r] = acc;
    }
}

std::vector<const Rows16Kernels*> rows16_kernel_variants(TensorType t, const CpuFeatures& cpu) {
  std::vector<const Rows16Kernels*> out;
#if defined(OSCAR_X86)
  static const Rows16Kernels kQ4KVnni{TensorType::Q4_K, gemv_q4_K_rows16_avx512vnni, gemm_q4_K_rows16_avx512vnni,
                                      quantize_q8_K_avx2, "rows16-avx512vnni", true};
  static const Rows16Kernels kQ6KVnni{TensorType::Q6_K, gemv_q6_K_rows16_avx512vnni, gemm_q6_K_rows16_avx512vnni,
                                      quantize_q8_K_avx2, "rows16-avx512vnni", true};
  static const Rows16Kernels kQ4KAvx2{TensorType::Q4_K, gemv_q4_K_rows16_avx2, gemm_q4_K_rows16_avx2,
                                      quantize_q8_K_avx2, "rows16-avx2", true};
  static const Rows16Kernels kQ6KAvx2{TensorType::Q6_K, gemv_q6_K_rows16_avx2, gemm_q6_K_rows16_avx2,
                                      quantize_q8_K_avx2, "rows16-avx2", false};
  const bool q4 = t == TensorType::Q4_K;
  if (!has_layout(t)) return out;
  if (cpu.avx512vnni && cpu.has_avx512_family()) out.push_back(q4 ? &kQ4KVnni : &kQ6KVnni);
  if (cpu.has_avx2_family()) out.push_back(q4 ? &kQ4KAvx2 : &kQ6KAvx2);
#endif
  (void)t;
  (void)cpu;
  return out;
}

const Rows16Kernels* rows16_kernels(TensorType t, const CpuFeatures& cpu) {
  const std::vector<const Rows16Kernels*> v = rows16_kernel_variants(t, cpu);
  return !v.empty() && v.front()->beats_file_layout ? v.front() : nullptr;
}

}  // namespace oscar::quant
