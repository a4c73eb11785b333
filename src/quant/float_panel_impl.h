// Panel GEMM of F32 / F16 / BF16 weights with packed f32 activations (see
// PanelGemmFn in quant/quant.h), written once over a vector-traits struct V
// and compiled per ISA, like float_dot_impl.h (same inclusion rules: only
// inside an anonymous namespace of an ISA translation unit).
//
// Why a second float kernel. The dot tiles keep k in the vector lanes, so
// every FMA needs a full vector of weights and one of activations from L1
// (32 bytes per FMA on AVX-512 with 4x4 tiles), the f16 conversion sits in
// the inner loop, and the working set of a tile is re-streamed from L2 for
// each tile of columns. Here, as in BLAS, the vector lanes run over weight
// rows instead: MR = MRV * W rows of the panel are converted once into an
// f32 micro-panel laid out k-major ([k][MR], 32 KiB on AVX-512, stays in
// L1), and every step k does MRV * NR FMAs with MRV vector loads and NR
// broadcast scalars of the packed activations ([k][NR] per group of NR
// columns), about 10 bytes per FMA. The micro-panel is then reused by every
// column group of the call. On Zen 5 this took f16 GEMM from 52-55% to
// 65-78% of the FMA peak on one thread (docs/decisions/0012-float-panel-gemm.md).
//
// Include after float_dot_impl.h (it defines FloatWeights). V provides,
// beyond what float_dot_impl.h needs: set1(float),
// store_f32(float*, F), add(F, F), and transpose(F rows[W]) that turns W
// vectors of W values into their transpose in place.

template <class V, FloatKind K, int MRV, int NR>
struct FloatPanel : FloatWeights<V, K> {
  using F = typename V::F;
  static constexpr int W = V::W;
  static constexpr int MR = MRV * W;
  using Elem = typename FloatWeights<V, K>::Elem;
  using FloatWeights<V, K>::load_w;
  using FloatWeights<V, K>::scalar_w;

  // dst[i * MR + r] = W_r[i] for i < kc, r < MR; rows at or past nr are 0.
  static void pack(int64_t kc, const uint8_t* w, size_t w_stride, int nr, float* dst) {
    const Elem* rows[MR];
    for (int r = 0; r < MR; ++r)
      rows[r] = reinterpret_cast<const Elem*>(w + (size_t)std::min(r, nr - 1) * w_stride);
    const int64_t kv = kc / W * W;
    for (int64_t k = 0; k < kv; k += W) {
      for (int h = 0; h < MRV; ++h) {
        F t[W];
        for (int j = 0; j < W; ++j) {
          const int r = h * W + j;
          t[j] = r < nr ? load_w(rows[r] + k) : V::zero();
        }
        V::transpose(t);
        for (int j = 0; j < W; ++j) V::store_f32(dst + (k + j) * MR + h * W, t[j]);
      }
    }
    for (int64_t k = kv; k < kc; ++k)
      for (int r = 0; r < MR; ++r) dst[k * MR + r] = r < nr ? scalar_w(rows[r], k) : 0.0f;
  }

  // y[c * y_stride + r] (+)= sum_i wp[i * MR + r] * xp[i * NR + c] for
  // r < nr, c < nc: one micro-panel against one packed column group. Every
  // index into acc is a compile-time constant (loops over NR and MRV only),
  // and the function is kept out of line: inlined into gemm(), or with a
  // run-time index, GCC 12 moves accumulators or weights to the stack and
  // the loop runs at a third of the speed.
  __attribute__((noinline)) static void micro(int64_t kc, const float* wp, const float* xp, int nr,
                                              int nc, float* y, size_t y_stride, bool accumulate) {
    F acc[NR][MRV];
    for (int c = 0; c < NR; ++c)
      for (int h = 0; h < MRV; ++h) acc[c][h] = V::zero();
    for (int64_t i = 0; i < kc; ++i) {
      F wv[MRV];
      for (int h = 0; h < MRV; ++h) wv[h] = V::load_f32(wp + i * MR + h * W);
      for (int c = 0; c < NR; ++c) {
        const F b = V::set1(xp[i * NR + c]);
        for (int h = 0; h < MRV; ++h) acc[c][h] = V::fma(wv[h], b, acc[c][h]);
      }
    }
    for (int c = 0; c < NR; ++c) {
      if (c >= nc) break;
      float* yc = y + (size_t)c * y_stride;
      if (nr == MR) {
        for (int h = 0; h < MRV; ++h) {
          F v = acc[c][h];
          if (accumulate) v = V::add(v, V::load_f32(yc + h * W));
          V::store_f32(yc + h * W, v);
        }
      } else {
        float tmp[MR];
        for (int h = 0; h < MRV; ++h) V::store_f32(tmp + h * W, acc[c][h]);
        for (int r = 0; r < nr; ++r) yc[r] = accumulate ? yc[r] + tmp[r] : tmp[r];
      }
    }
  }

  static void gemm(int64_t kc, const void* w, size_t w_stride, int nr, const float* xp,
                   size_t group_stride, int64_t n_cols, float* y, size_t y_stride,
                   bool accumulate) {
    alignas(64) float wp[MR * kPanelK];
    const auto* wb = static_cast<const uint8_t*>(w);
    for (int r0 = 0; r0 < nr; r0 += MR) {
      const int rn = std::min(MR, nr - r0);
      pack(kc, wb + (size_t)r0 * w_stride, w_stride, rn, wp);
      for (int64_t c0 = 0; c0 < n_cols; c0 += NR) {
        const int cn = (int)std::min<int64_t>(NR, n_cols - c0);
        micro(kc, wp, xp + (size_t)(c0 / NR) * group_stride, rn, cn, y + (size_t)c0 * y_stride + r0,
              y_stride, accumulate);
      }
    }
  }
};
