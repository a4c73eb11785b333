#include "quant/kquant_rows16.h"

#include <cstring>
#include <string>
#include <vector>

#include "core/error.h"
#include "core/fp16.h"
#include "quant/kquant_blocks.h"

namespace oscar::quant {

bool q4_K_rows16_fits(int64_t rows, int64_t cols) {
  return rows > 0 && cols > 0 && rows % kRows16 == 0 && cols % kQK_K == 0;
}

size_t q4_K_rows16_bytes(int64_t rows, int64_t cols) {
  return (size_t)(rows / kRows16) * (size_t)(cols / kQK_K) * sizeof(BlockQ4_Kx16);
}

void repack_q4_K_rows16(const void* src, size_t row_bytes, int64_t rows, int64_t cols, void* dst) {
  require(q4_K_rows16_fits(rows, cols), [&] {
    return "rows16 repack: a " + std::to_string(rows) + " x " + std::to_string(cols) +
           " Q4_K matrix needs rows a multiple of 16 and columns a multiple of 256";
  });
  const int64_t nb = cols / kQK_K;
  auto* out = static_cast<BlockQ4_Kx16*>(dst);
  for (int64_t g = 0; g < rows / kRows16; ++g)
    for (int64_t ib = 0; ib < nb; ++ib) {
      BlockQ4_Kx16& o = out[g * nb + ib];
      for (int r = 0; r < kRows16; ++r) {
        const auto* row = static_cast<const uint8_t*>(src) + (size_t)(g * kRows16 + r) * row_bytes;
        const BlockQ4_K& b = reinterpret_cast<const BlockQ4_K*>(row)[ib];
        o.d[r] = b.d;
        o.dmin[r] = b.dmin;
        for (int i = 0; i < 12; ++i) o.scales[i][r] = b.scales[i];
        for (int c = 0; c < 32; ++c) std::memcpy(&o.qs[c][4 * r], &b.qs[4 * c], 4);
      }
    }
}

void unpack_q4_K_rows16(const void* src, int64_t rows, int64_t cols, void* dst, size_t row_bytes) {
  require(q4_K_rows16_fits(rows, cols), "rows16 unpack: shape does not fit");
  const int64_t nb = cols / kQK_K;
  const auto* in = static_cast<const BlockQ4_Kx16*>(src);
  for (int64_t g = 0; g < rows / kRows16; ++g)
    for (int64_t ib = 0; ib < nb; ++ib) {
      const BlockQ4_Kx16& p = in[g * nb + ib];
      for (int r = 0; r < kRows16; ++r) {
        auto* row = static_cast<uint8_t*>(dst) + (size_t)(g * kRows16 + r) * row_bytes;
        BlockQ4_K& b = reinterpret_cast<BlockQ4_K*>(row)[ib];
        b.d = p.d[r];
        b.dmin = p.dmin[r];
        for (int i = 0; i < 12; ++i) b.scales[i] = p.scales[i][r];
        for (int c = 0; c < 32; ++c) std::memcpy(&b.qs[4 * c], &p.qs[c][4 * r], 4);
      }
    }
}

void repack_q4_K_rows16_in_place(void* data, int64_t rows, int64_t cols) {
  require(q4_K_rows16_fits(rows, cols), "rows16 repack: shape does not fit");
  const size_t row_bytes = (size_t)(cols / kQK_K) * sizeof(BlockQ4_K);
  const size_t group_bytes = kRows16 * row_bytes;
  std::vector<uint8_t> rows_of_group(group_bytes);
  for (int64_t g = 0; g < rows / kRows16; ++g) {
    uint8_t* at = static_cast<uint8_t*>(data) + (size_t)g * group_bytes;
    std::memcpy(rows_of_group.data(), at, group_bytes);
    repack_q4_K_rows16(rows_of_group.data(), row_bytes, kRows16, cols, at);
  }
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

const Rows16Kernels* q4_K_rows16_kernels(const CpuFeatures& cpu) {
#if defined(OSCAR_X86)
  static const Rows16Kernels kVnni{gemv_q4_K_rows16_avx512vnni, gemm_q4_K_rows16_avx512vnni, quantize_q8_K_avx2,
                                   "rows16-avx512vnni"};
  if (cpu.avx512vnni && cpu.has_avx512_family()) return &kVnni;
#endif
  (void)cpu;
  return nullptr;
}

}  // namespace oscar::quant
