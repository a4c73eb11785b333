#include <algorithm>
#include <atomic>
#include <cmath>
#include <vector>

#include "attention/attention.h"
#include "attention/row_kernels.h"
#include "core/error.h"
#include "kernels/ops.h"

namespace oscar::attention {

namespace {

// Rows scored before one softmax update. Cached blocks of small rows (q2_0:
// 36 bytes at d128) take kMaxBlock, which spreads the softmax updates and the
// kernels' per-block work (the value sums' weight digits, their epilogue)
// over more rows: 64 rows made q2_0 decode attention at 16K 8-13% faster
// than 32 (session 11), 128 another 1-11% (session 12). Wider rows keep
// kBlock: at 64 f16 d128 rows (16 KiB per stream) the K and V blocks crowd
// the L1 and f16 ran about 20% slower (bench/RESULTS.md, session 11).
constexpr int kBlock = 32;
constexpr int kMaxBlock = 128;
// Rows up to this size go in kMaxBlock blocks: q2_0 rows of d128 (36 bytes)
// and of Gemma-4's global d512 (132 bytes; 4-5% faster there at 16K).
constexpr size_t kSmallRowBytes = 136;
constexpr int kMinChunk = 256;        // fewest cached positions worth a thread of their own

// Online-softmax state of one query head over part of the keys.
struct Partial {
  float m;    // running max score
  float l;    // running sum of exp(score - m)
  float* acc; // (d) running sum of exp(score - m) * v
};

// Folds a block of scores (already scaled) into the state; leaves the
// block's weights exp(s - m_new) in p for the V pass.
void softmax_update(Partial& st, const float* s, float* p, int n, int d) {
  float mx;
  const float sum = exp_shifted(s, st.m, p, n, &mx);
  if (mx > st.m) {
    const float corr = std::exp(st.m - mx);  // exp(-inf) = 0 on the first block
    st.l *= corr;
    for (int i = 0; i < d; ++i) st.acc[i] *= corr;
  }
  st.l += sum;
  st.m = mx;
}

// Finds, for ascending positions, the segment holding each one.
struct SegmentCursor {
  kv::Segment seg[4];
  int n = 0, i = 0;
  const kv::Segment& at(int pos) {
    while (i < n && seg[i].end <= pos) ++i;
    return seg[i];
  }
};

}  // namespace

void attend_fused(const model::LayerConfig& layer, int il, const kv::KvCache& cache, const BatchView& b,
                  float* out, ThreadPool& pool) {
  const int d = layer.head_dim, n_kv = layer.n_head_kv, group = layer.n_head / n_kv;
  const int q_width = layer.n_head * d, kv_width = n_kv * d;
  const float scale = layer.kq_scale();
  const kv::TierStore& ks = cache.k_store(il);
  const kv::TierStore& vs = cache.v_store(il);

  // Split long cached contexts so every thread has work even when there are
  // fewer (token, KV head) pairs than threads (decode): flash-decoding.
  const int pairs = b.n_tokens * n_kv;
  // Cached positions each token reads: [first, n_cached), first > 0 only in
  // sliding-window layers.
  auto first_cached = [&](int t) { return std::min(window_start(layer, b.pos[t]), b.n_cached[t]); };
  int max_cached = 0;
  for (int t = 0; t < b.n_tokens; ++t) max_cached = std::max(max_cached, b.n_cached[t] - first_cached(t));
  int n_chunks = 1;
  if (pairs < 2 * pool.size())
    n_chunks = std::clamp((2 * pool.size() + pairs - 1) / pairs, 1, std::max(1, max_cached / kMinChunk));
  const int items = pairs * n_chunks;

  // Partial results per item: m (group), l (group), acc (group, d).
  std::vector<float> part((size_t)items * group * (d + 2));

  // Items are handed out in small runs from a shared counter, latest tokens
  // first: in a causal prompt they read the most rows, and a static split
  // would leave the thread with the early tokens idle.
  std::atomic<size_t> next{0};
  const size_t run_len = std::max<size_t>(1, (size_t)items / (16 * (size_t)pool.size()));
  pool.run([&](int, int) {
    std::vector<float> tmp((size_t)d), scores((size_t)group * kMaxBlock), p((size_t)group * kMaxBlock);
    std::vector<int> keys;
    std::vector<Partial> st((size_t)group);
    Q2IntQuery q2_int;
    auto process = [&](size_t item) {
      const int c = (int)(item % n_chunks), pair = (int)(item / n_chunks);
      const int t = pair / n_kv, g = pair % n_kv;
      const int seq = b.seq[t], pos = b.pos[t], n_cached = b.n_cached[t];
      const int lo = window_start(layer, pos), first = std::min(lo, n_cached), span = n_cached - first;
      const int c0 = first + (int)((long long)span * c / n_chunks);
      const int c1 = first + (int)((long long)span * (c + 1) / n_chunks);

      float* base = &part[item * group * (d + 2)];
      for (int h = 0; h < group; ++h) {
        st[(size_t)h] = {-INFINITY, 0.0f, base + 2 * group + (size_t)h * d};
        std::fill(st[(size_t)h].acc, st[(size_t)h].acc + d, 0.0f);
      }
      q2_int.forget();
      const GroupQuery gq{b.q + (size_t)t * q_width + (size_t)g * group * d, group, d, &q2_int};

      SegmentCursor kc, vc;
      kc.n = ks.segments(seq, g, n_cached, kc.seg);
      vc.n = vs.segments(seq, g, n_cached, vc.seg);
      // A ring that no longer holds c0 would send the cursor past its
      // segments: refuse rather than read out of bounds.
      if (c0 < c1 && (kc.n == 0 || vc.n == 0 || kc.seg[0].begin > c0 || vc.seg[0].begin > c0))
        throw Error("attention: layer " + std::to_string(il) + " no longer holds position " + std::to_string(c0) +
                    " of sequence " + std::to_string(seq));
      for (int p0 = c0; p0 < c1;) {
        // A block never crosses a K or V segment boundary.
        const kv::Segment& ksg = kc.at(p0);
        const kv::Segment& vsg = vc.at(p0);
        const bool small = ksg.codec->row_bytes() <= kSmallRowBytes && vsg.codec->row_bytes() <= kSmallRowBytes;
        const int bs = small ? kMaxBlock : kBlock;  // also the stride of scores and p
        const int p1 = std::min({c1, p0 + bs, ksg.end, vsg.end});
        const int n = p1 - p0;
        score_rows(*ksg.codec, ksg.rows + (size_t)(p0 - ksg.begin) * ksg.stride, ksg.stride, n, gq, scale,
                   scores.data(), (size_t)bs, tmp.data());
        for (int h = 0; h < group; ++h)
          softmax_update(st[(size_t)h], &scores[(size_t)h * bs], &p[(size_t)h * bs], n, d);
        accumulate_rows(*vsg.codec, vsg.rows + (size_t)(p0 - vsg.begin) * vsg.stride, vsg.stride, n, p.data(),
                        (size_t)bs, group, base + 2 * group, tmp.data());
        p0 = p1;
      }
      // The batch's own keys (full precision) go with the last chunk, in
      // blocks like the cached ones.
      if (c == n_chunks - 1) {
        keys.clear();
        for (int j = 0; j < b.n_tokens; ++j)
          if (b.seq[j] == seq && b.pos[j] <= pos && b.pos[j] >= std::max(n_cached, lo)) keys.push_back(j);
        for (size_t k0 = 0; k0 < keys.size();) {
          // A block of consecutive batch rows (one sequence's tokens are).
          size_t k1 = k0 + 1;
          while (k1 < keys.size() && k1 - k0 < (size_t)kBlock && keys[k1] == keys[k1 - 1] + 1) ++k1;
          const int n = (int)(k1 - k0);
          const size_t off = (size_t)keys[k0] * kv_width + (size_t)g * d;
          score_rows_f32(b.k + off, (size_t)kv_width, n, gq, scale, scores.data(), kBlock);
          for (int h = 0; h < group; ++h)
            softmax_update(st[(size_t)h], &scores[(size_t)h * kBlock], &p[(size_t)h * kBlock], n, d);
          accumulate_rows_f32(b.v + off, (size_t)kv_width, n, p.data(), kBlock, group, d, base + 2 * group);
          k0 = k1;
        }
      }
      for (int h = 0; h < group; ++h) {
        base[h] = st[(size_t)h].m;
        base[group + h] = st[(size_t)h].l;
      }
    };
    for (;;) {
      const size_t r0 = next.fetch_add(run_len, std::memory_order_relaxed);
      if (r0 >= (size_t)items) return;
      for (size_t r = r0; r < std::min((size_t)items, r0 + run_len); ++r) process((size_t)items - 1 - r);
    }
  });

  // Merge the chunks of each (token, KV head): rescale to a common max.
  for (int pair = 0; pair < pairs; ++pair) {
    const int t = pair / n_kv, g = pair % n_kv;
    for (int h = 0; h < group; ++h) {
      float M = -INFINITY;
      auto chunk = [&](int c) { return &part[(size_t)(pair * n_chunks + c) * group * (d + 2)]; };
      for (int c = 0; c < n_chunks; ++c) M = std::max(M, chunk(c)[h]);
      float* o = out + (size_t)t * q_width + ((size_t)g * group + h) * d;
      std::fill(o, o + d, 0.0f);
      float L = 0;
      for (int c = 0; c < n_chunks; ++c) {
        const float* pc = chunk(c);
        const float m = pc[h], l = pc[group + h];
        if (l == 0.0f) continue;  // an empty chunk
        const float w = std::exp(m - M);
        L += w * l;
        kernels::axpy(w, pc + 2 * group + (size_t)h * d, o, d);
      }
      const float inv = L > 0 ? 1.0f / L : 0.0f;
      for (int i = 0; i < d; ++i) o[i] *= inv;
    }
  }
}

}  // namespace oscar::attention
