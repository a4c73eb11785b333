// Dot tiles of F32 / F16 / BF16 weights with f32 activations, written once
// over a small vector-traits struct V and compiled per ISA.
//
// Include this file only inside an anonymous namespace of an ISA translation
// unit, after <immintrin.h> and the V definition: every function then has
// internal linkage, so the linker can never merge an AVX-512 copy into code
// that runs on an AVX2-only CPU (the usual hazard of shared inline templates
// compiled with different -m flags).
//
// V provides: F (vector of W floats), W, zero(), load_f32(const float*),
// load_f16(const uint16_t*), load_bf16(const uint16_t*), fma(a, b, c),
// hsum(F), and the scalar f16_to_f32(uint16_t) for the tails.
//
// Structure. The tile (nr x nc <= 8 x 8) is cut into register-blocked
// micro-tiles of at most RM x CM rows x columns. With several columns the
// k range is walked in chunks of kKChunk values, and every micro-tile of the
// tile runs over a chunk before the next chunk starts: the chunk of all 8
// weight rows and 8 activation rows (<= 24 KiB) then stays in L1 while it is
// reused, instead of streaming whole rows from L2 once per micro-tile. The
// vector accumulators live in a small buffer between chunks. A single column
// (GEMV) needs no chunking: up to 8 weight rows stream once against one
// activation row held in L1, with 8 independent FMA chains.

constexpr int64_t kKChunk = 512;

inline float bf16_scalar(uint16_t h) {
  uint32_t u = (uint32_t)h << 16;
  float f;
  __builtin_memcpy(&f, &u, 4);
  return f;
}

// Loads of one weight element type: a vector of W values, or one value.
// Shared by the dot tiles here and the panel GEMM (float_panel_impl.h).
template <class V, FloatKind K>
struct FloatWeights {
  using F = typename V::F;
  using Elem = std::conditional_t<K == kF32, float, uint16_t>;

  static inline F load_w(const Elem* p) {
    if constexpr (K == kF32) {
      return V::load_f32(p);
    } else if constexpr (K == kF16) {
      return V::load_f16(p);
    } else {
      return V::load_bf16(p);
    }
  }
  static inline float scalar_w(const Elem* p, int64_t i) {
    if constexpr (K == kF32) {
      return p[i];
    } else if constexpr (K == kF16) {
      return V::f16_to_f32(p[i]);
    } else {
      return bf16_scalar(p[i]);
    }
  }
};

template <class V, FloatKind K>
struct FloatTile : FloatWeights<V, K> {
  using F = typename V::F;
  static constexpr int W = V::W;
  using Elem = typename FloatWeights<V, K>::Elem;
  using FloatWeights<V, K>::load_w;
  using FloatWeights<V, K>::scalar_w;

  // acc[r * kMaxTile + c] += sum over [k0, k1) of w_r * a_c, for an R x C
  // micro-tile. k1 - k0 is a multiple of W.
  template <int R, int C>
  static void micro(int64_t k0, int64_t k1, const Elem* const* w, const float* const* a, F* acc) {
    F s[R][C];
    for (int r = 0; r < R; ++r)
      for (int c = 0; c < C; ++c) s[r][c] = acc[r * kMaxTile + c];
    for (int64_t i = k0; i < k1; i += W) {
      F av[C];
      for (int c = 0; c < C; ++c) av[c] = V::load_f32(a[c] + i);
      for (int r = 0; r < R; ++r) {
        const F wv = load_w(w[r] + i);
        for (int c = 0; c < C; ++c) s[r][c] = V::fma(wv, av[c], s[r][c]);
      }
    }
    for (int r = 0; r < R; ++r)
      for (int c = 0; c < C; ++c) acc[r * kMaxTile + c] = s[r][c];
  }

  using MicroFn = void (*)(int64_t, int64_t, const Elem* const*, const float* const*, F*);

  template <int RM, int CM>
  static void dot(int64_t n, const void* w, size_t w_stride, int nr, const void* act,
                  size_t act_stride, int nc, float* out, size_t out_stride) {
    const Elem* wr[kMaxTile];
    const float* ar[kMaxTile];
    for (int r = 0; r < nr; ++r)
      wr[r] = reinterpret_cast<const Elem*>(static_cast<const uint8_t*>(w) + (size_t)r * w_stride);
    for (int c = 0; c < nc; ++c)
      ar[c] = reinterpret_cast<const float*>(static_cast<const uint8_t*>(act) +
                                             (size_t)c * act_stride);
    F acc[kMaxTile * kMaxTile];
    for (int r = 0; r < nr; ++r)
      for (int c = 0; c < nc; ++c) acc[r * kMaxTile + c] = V::zero();
    const int64_t nv = n / W * W;

    if (nc == 1) {
      // GEMV: rows in groups of up to 8, each group one pass over k.
      static constexpr MicroFn col1[8] = {micro<1, 1>, micro<2, 1>, micro<3, 1>, micro<4, 1>,
                                          micro<5, 1>, micro<6, 1>, micro<7, 1>, micro<8, 1>};
      col1[nr - 1](0, nv, wr, ar, acc);
    } else {
      static constexpr auto table = make_table<RM, CM>(std::make_integer_sequence<int, RM * CM>{});
      for (int64_t k0 = 0; k0 < nv; k0 += kKChunk) {
        const int64_t k1 = std::min(nv, k0 + kKChunk);
        for (int r0 = 0; r0 < nr; r0 += RM) {
          const int rn = std::min(RM, nr - r0);
          for (int c0 = 0; c0 < nc; c0 += CM) {
            const int cn = std::min(CM, nc - c0);
            table[(rn - 1) * CM + (cn - 1)](k0, k1, wr + r0, ar + c0,
                                            acc + r0 * kMaxTile + c0);
          }
        }
      }
    }

    for (int r = 0; r < nr; ++r)
      for (int c = 0; c < nc; ++c) {
        float s = V::hsum(acc[r * kMaxTile + c]);
        for (int64_t i = nv; i < n; ++i) s += scalar_w(wr[r], i) * ar[c][i];
        out[(size_t)r * out_stride + c] = s;
      }
  }

  template <int RM, int CM, int... I>
  static constexpr std::array<MicroFn, RM * CM> make_table(std::integer_sequence<int, I...>) {
    return {micro<I / CM + 1, I % CM + 1>...};
  }
};
