// Dot tiles of the legacy 32-value formats with Q8_0 / Q8_1 activations,
// written once over an ISA traits struct T and compiled per ISA.
//
// Include only inside an anonymous namespace of an ISA translation unit, after
// the intrinsics headers and T (see float_dot_impl.h for why).
//
// T provides: G (blocks per vector: 1 for 256-bit, 2 for 512-bit), I / F
// (int8 and float vectors), load_a(qs, stride) -> G activation blocks,
// scale(p, stride) -> float vector whose lanes of block i hold the f16 at
// p + i * stride, dot_us (u8 x s8 -> int32 lanes), dot_us_acc(acc, u, s) =
// acc + dot_us(u, s), cvt, mul, fma, zero, hsum, and for the weight codes:
//  - bias<K>() = B != 0 (Q4_0, Q5_0, Q8_0 with VNNI): load_w_biased<K>(block)
//    -> the signed codes plus B as unsigned bytes (Q4_0's raw nibbles, Q8_0's
//    bytes ^ 0x80), and neg_bias_sum(a, B) -> -B * (sum of each lane's
//    activations). Then sum (q + B) a = sum q a + B sum a, and each lane
//    starts at -B sum a, computed once per activation block for all rows;
//  - otherwise load_w<K>(block) -> the codes as int8 (unsigned 0..31 for the
//    _1 formats; Q8_0's signed bytes where vpmaddubsw's int16 pair sums would
//    saturate on bytes + 128), and for signed codes abs8, sign_of and
//    apply_sign (a * sign(q)): the sign trick, |q| is unsigned and the sign
//    moves onto the activation.
// All of them take the G consecutive blocks in value order.
//
// Per block and (row, column) the integer dot is exact; then
// acc += float(isum lanes) * (dw * da), and for the _1 formats
// acc += (m / 8) * s in each of the block's 8 lanes (= m * s after hsum).

constexpr int64_t kBlockChunk = 32;  // blocks per k chunk in GEMM tiles

template <LegacyKind K>
struct LegacyGeom;
template <>
struct LegacyGeom<kQ4_0> {
  static constexpr size_t wb = 18, ab = 34;
};
template <>
struct LegacyGeom<kQ4_1> {
  static constexpr size_t wb = 20, ab = 36;
};
template <>
struct LegacyGeom<kQ5_0> {
  static constexpr size_t wb = 22, ab = 34;
};
template <>
struct LegacyGeom<kQ5_1> {
  static constexpr size_t wb = 24, ab = 36;
};
template <>
struct LegacyGeom<kQ8_0> {
  static constexpr size_t wb = 34, ab = 34;
};

template <class T, LegacyKind K>
struct LegacyTile {
  using I = typename T::I;
  using F = typename T::F;
  static constexpr int G = T::G;
  static constexpr size_t WB = LegacyGeom<K>::wb;
  static constexpr size_t AB = LegacyGeom<K>::ab;
  static constexpr bool kMin = (K == kQ4_1 || K == kQ5_1);  // Q8_1 activations
  static constexpr size_t AQ = kMin ? 4 : 2;                 // offset of act qs

  // acc[r * kMaxTile + c] += blocks [b0, b1) of row r . column c, b1 - b0 a
  // multiple of G.
  template <int R, int C>
  static void micro(int64_t b0, int64_t b1, const uint8_t* const* w, const uint8_t* const* a,
                    F* acc) {
    F s[R][C];
    for (int r = 0; r < R; ++r)
      for (int c = 0; c < C; ++c) s[r][c] = acc[r * kMaxTile + c];
    constexpr int B = T::template bias<K>();
    // GEMV streams R rows at once and runs its tiles in row order. The
    // hardware prefetcher neither keeps R + 1 streams ahead nor starts the
    // next tile's R new streams before their first misses, so both are
    // prefetched here: a few blocks ahead in this row, and the same bytes of
    // the next tile's row (q8_0 with 2 threads: 60-77% -> 78-87% of the read
    // bandwidth, docs/decisions/0006-software-prefetch.md).
    constexpr ptrdiff_t kRowAhead = 320;
    const ptrdiff_t next_tile = R > 1 ? (w[1] - w[0]) * R : 0;
    for (int64_t b = b0; b < b1; b += G) {
      I av[C], nb[C];
      F dav[C], sv[C];
      for (int c = 0; c < C; ++c) {
        const uint8_t* p = a[c] + (size_t)b * AB;
        av[c] = T::load_a(p + AQ, AB);
        dav[c] = T::scale(p, AB);
        if constexpr (kMin) sv[c] = T::scale(p + 2, AB);
        if constexpr (B != 0) nb[c] = T::neg_bias_sum(av[c], B);
      }
      for (int r = 0; r < R; ++r) {
        const uint8_t* p = w[r] + (size_t)b * WB;
        if constexpr (C == 1 && R > 1) {
          __builtin_prefetch(p + next_tile);
          __builtin_prefetch(p + kRowAhead);
        }
        const F dw = T::scale(p, WB);
        if constexpr (kMin) {
          const I q = T::template load_w<K>(p);
          const F mv = T::mul(T::scale(p + 2, WB), T::set1(0.125f));
          for (int c = 0; c < C; ++c) {
            const F f = T::cvt(T::dot_us(q, av[c]));
            s[r][c] = T::fma(f, T::mul(dw, dav[c]), s[r][c]);
            s[r][c] = T::fma(mv, sv[c], s[r][c]);
          }
        } else if constexpr (B != 0) {
          const I u = T::template load_w_biased<K>(p);
          for (int c = 0; c < C; ++c) {
            const F f = T::cvt(T::dot_us_acc(nb[c], u, av[c]));
            s[r][c] = T::fma(f, T::mul(dw, dav[c]), s[r][c]);
          }
        } else {
          const I q = T::template load_w<K>(p);
          const I aq = T::abs8(q);
          const auto sg = T::sign_of(q);
          for (int c = 0; c < C; ++c) {
            const F f = T::cvt(T::dot_us(aq, T::apply_sign(av[c], sg)));
            s[r][c] = T::fma(f, T::mul(dw, dav[c]), s[r][c]);
          }
        }
      }
    }
    for (int r = 0; r < R; ++r)
      for (int c = 0; c < C; ++c) acc[r * kMaxTile + c] = s[r][c];
  }

  using MicroFn = void (*)(int64_t, int64_t, const uint8_t* const*, const uint8_t* const*, F*);

  template <int RM, int CM, int... X>
  static constexpr std::array<MicroFn, RM * CM> make_table(std::integer_sequence<int, X...>) {
    return {micro<X / CM + 1, X % CM + 1>...};
  }

  // All micro-tiles of the nr x nc tile over blocks [b0, b1).
  template <int RM, int CM>
  static void run(int64_t b0, int64_t b1, const uint8_t* const* wr, int nr,
                  const uint8_t* const* ar, int nc, F* acc) {
    if (nc == 1) {
      // GEMV: up to 8 rows against one activation row, one pass over k.
      static constexpr MicroFn col1[8] = {micro<1, 1>, micro<2, 1>, micro<3, 1>, micro<4, 1>,
                                          micro<5, 1>, micro<6, 1>, micro<7, 1>, micro<8, 1>};
      col1[nr - 1](b0, b1, wr, ar, acc);
      return;
    }
    static constexpr auto table = make_table<RM, CM>(std::make_integer_sequence<int, RM * CM>{});
    // k chunks so the tile's blocks stay in L1 while every micro-tile uses them.
    for (int64_t k0 = b0; k0 < b1; k0 += kBlockChunk) {
      const int64_t k1 = std::min(b1, k0 + kBlockChunk);
      for (int r0 = 0; r0 < nr; r0 += RM) {
        const int rn = std::min(RM, nr - r0);
        for (int c0 = 0; c0 < nc; c0 += CM) {
          const int cn = std::min(CM, nc - c0);
          table[(rn - 1) * CM + (cn - 1)](k0, k1, wr + r0, ar + c0, acc + r0 * kMaxTile + c0);
        }
      }
    }
  }

  template <int RM, int CM>
  static void dot(int64_t n, const void* w, size_t w_stride, int nr, const void* act,
                  size_t act_stride, int nc, float* out, size_t out_stride) {
    const uint8_t* wr[kMaxTile];
    const uint8_t* ar[kMaxTile];
    for (int r = 0; r < nr; ++r) wr[r] = static_cast<const uint8_t*>(w) + (size_t)r * w_stride;
    for (int c = 0; c < nc; ++c) ar[c] = static_cast<const uint8_t*>(act) + (size_t)c * act_stride;
    F acc[kMaxTile * kMaxTile];
    for (int r = 0; r < nr; ++r)
      for (int c = 0; c < nc; ++c) acc[r * kMaxTile + c] = T::zero();

    const int64_t nb = n / kQK;
    const int64_t nbm = nb / G * G;
    run<RM, CM>(0, nbm, wr, nr, ar, nc, acc);
    if (nbm < nb) {
      // Odd block count with 2-block vectors: the last block runs from copies
      // padded with an all-zero block (zero codes and scales add nothing), so
      // the loaders never read past the row.
      alignas(64) uint8_t wpad[kMaxTile][G * WB] = {};
      alignas(64) uint8_t apad[kMaxTile][G * AB] = {};
      const uint8_t* wp[kMaxTile];
      const uint8_t* ap[kMaxTile];
      for (int r = 0; r < nr; ++r) {
        __builtin_memcpy(wpad[r], wr[r] + (size_t)nbm * WB, WB);
        wp[r] = wpad[r];
      }
      for (int c = 0; c < nc; ++c) {
        __builtin_memcpy(apad[c], ar[c] + (size_t)nbm * AB, AB);
        ap[c] = apad[c];
      }
      run<RM, CM>(0, G, wp, nr, ap, nc, acc);
    }
    for (int r = 0; r < nr; ++r)
      for (int c = 0; c < nc; ++c) out[(size_t)r * out_stride + c] = T::hsum(acc[r * kMaxTile + c]);
  }
};

// The five kernels of one ISA with RM x CM micro-tiles.
template <class T, int RM, int CM>
struct LegacySet {
  template <LegacyKind K>
  static void dot(int64_t n, const void* w, size_t ws, int nr, const void* a, size_t as, int nc,
                  float* out, size_t os) {
    LegacyTile<T, K>::template dot<RM, CM>(n, w, ws, nr, a, as, nc, out, os);
  }
  static LegacyKernelSet make() {
    return {{dot<kQ4_0>, dot<kQ4_1>, dot<kQ5_0>, dot<kQ5_1>, dot<kQ8_0>}};
  }
};
