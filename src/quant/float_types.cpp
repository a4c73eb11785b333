// F32, F16 and BF16 weights: conversions, scalar reference dot tiles, and the
// choice of SIMD kernel for the CPU.
//
// All three take f32 activations. A GEMV is bound by the weight stream, so
// activation width costs nothing there; in a GEMM each converted weight
// vector is reused across the tile's columns, and f32 activations need no
// conversion at all, so they are also the faster choice (and exact).
#include <cstring>

#include "core/fp16.h"
#include "quant/blocks_legacy.h"

namespace oscar::quant {
namespace {

void copy_f32(const void* src, float* dst, int64_t n) { std::memcpy(dst, src, (size_t)n * 4); }
void copy_f32_q(const float* src, void* dst, int64_t n) { std::memcpy(dst, src, (size_t)n * 4); }

void dequantize_f16(const void* src, float* dst, int64_t n) {
  const auto* x = static_cast<const uint16_t*>(src);
  for (int64_t i = 0; i < n; ++i) dst[i] = fp16_to_f32(x[i]);
}
void quantize_f16(const float* src, void* dst, int64_t n) {
  auto* y = static_cast<uint16_t*>(dst);
  for (int64_t i = 0; i < n; ++i) y[i] = f32_to_fp16(src[i]);
}
void dequantize_bf16(const void* src, float* dst, int64_t n) {
  const auto* x = static_cast<const uint16_t*>(src);
  for (int64_t i = 0; i < n; ++i) dst[i] = bf16_to_f32(x[i]);
}
void quantize_bf16(const float* src, void* dst, int64_t n) {
  auto* y = static_cast<uint16_t*>(dst);
  for (int64_t i = 0; i < n; ++i) y[i] = f32_to_bf16(src[i]);
}

template <FloatKind K>
inline float weight(const void* row, int64_t i) {
  if constexpr (K == kF32) {
    return static_cast<const float*>(row)[i];
  } else if constexpr (K == kF16) {
    return fp16_to_f32(static_cast<const uint16_t*>(row)[i]);
  } else {
    return bf16_to_f32(static_cast<const uint16_t*>(row)[i]);
  }
}

// Reference: plain double-precision sums (weights and f32 activations are
// exact in double, so only the final rounding differs from the exact dot).
template <FloatKind K>
void dot_ref(int64_t n, const void* w, size_t w_stride, int nr, const void* act,
             size_t act_stride, int nc, float* out, size_t out_stride) {
  for (int r = 0; r < nr; ++r) {
    const auto* wr = static_cast<const uint8_t*>(w) + (size_t)r * w_stride;
    for (int c = 0; c < nc; ++c) {
      const auto* a = reinterpret_cast<const float*>(static_cast<const uint8_t*>(act) +
                                                     (size_t)c * act_stride);
      double acc = 0.0;
      for (int64_t i = 0; i < n; ++i) acc += (double)weight<K>(wr, i) * (double)a[i];
      out[(size_t)r * out_stride + c] = (float)acc;
    }
  }
}

}  // namespace

void pack_panel_act(const float* x, size_t x_stride, int nc, int64_t k, int nr_group, float* dst) {
  for (int64_t i = 0; i < k; ++i)
    for (int c = 0; c < nr_group; ++c) dst[i * nr_group + c] = c < nc ? x[(size_t)c * x_stride + i] : 0.0f;
}

const FloatKernelSet& float_kernels_scalar() {
  static const FloatKernelSet k = {{dot_ref<kF32>, dot_ref<kF16>, dot_ref<kBF16>}, {}, 0};
  return k;
}

void register_float_types(QuantTraits* table, bool* present, const CpuFeatures& cpu) {
  const FloatKernelSet* best = &float_kernels_scalar();
  const char* impl = "scalar";
#if defined(OSCAR_X86)
  if (cpu.has_avx512_family()) {
    best = &float_kernels_avx512();
    impl = "avx512";
  } else if (cpu.has_avx2_family()) {
    best = &float_kernels_avx2();
    impl = "avx2";
  }
#endif
  const FloatKernelSet& ref = float_kernels_scalar();
  struct Row {
    TensorType type;
    FloatKind kind;
    DequantizeRowFn deq;
    QuantizeRowFn q;
  };
  DequantizeRowFn deq_f16 = dequantize_f16;
  QuantizeRowFn q_f16 = quantize_f16;
#if defined(OSCAR_X86)
  if (cpu.has_avx2_family()) {
    deq_f16 = dequantize_f16_f16c;
    q_f16 = quantize_f16_f16c;
  }
#endif
  const Row rows[] = {
      {TensorType::F32, kF32, copy_f32, copy_f32_q},
      {TensorType::F16, kF16, deq_f16, q_f16},
      {TensorType::BF16, kBF16, dequantize_bf16, quantize_bf16},
  };
  for (const Row& r : rows) {
    QuantTraits& t = table[(uint32_t)r.type];
    t.type = r.type;
    t.act_type = TensorType::F32;
    t.dequantize = r.deq;
    t.quantize = r.q;
    t.quantize_act = copy_f32_q;
    t.dot_ref = ref.dot[r.kind];
    t.dot = best->dot[r.kind];
    t.dot_impl = impl;
    t.gemm_panel = best->panel[r.kind];
    t.gemm_panel_cols = best->panel_cols;
    present[(uint32_t)r.type] = true;
  }
}

}  // namespace oscar::quant
