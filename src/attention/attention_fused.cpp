#include <algorithm>
#include <atomic>
#include <cmath>
#include <vector>

#include "attention/attention.h"
#include "attention/prompt_tile.h"
#include "attention/row_kernels.h"
#include "core/error.h"
#include "core/prefetch.h"
#include "kernels/ops.h"

namespace oscar::attention {

namespace {

// Rows scored before one softmax update. Cached blocks of small rows (q2_0:
// 36 bytes at d128) take kMaxBlock, which spreads the softmax updates and the
// kernels' per-block work (the value sums' weight digits, their epilogue)
// over more rows: 64 rows made q2_0 decode attention at 16K 8-13% faster
// than 32 (session 11), 128 another 1-11% (session 12). Wider rows keep
// kBlock: at 64 f16 d128 rows (16 KiB per stream) the K and V blocks crowd
// the L1 and f16 ran about 20% slower (docs/decisions/0003-fused-attention-blocks.md).
constexpr int kBlock = 32;
constexpr int kMaxBlock = 128;
// Rows up to this size go in kMaxBlock blocks: q2_0 rows of d128 (36 bytes)
// and of Gemma-4's global d512 (132 bytes; 4-5% faster there at 16K).
constexpr size_t kSmallRowBytes = 136;
constexpr int kMinChunk = 256;        // fewest cached positions worth a thread of their own
// Query heads one item serves (QueryTile). The row kernels take 8 heads a
// call (float and integer q2_0 alike) and the tile's further heads in more
// calls over the same rows, then in L1: a prompt at depth streams each row
// from memory once per tile, so larger tiles read less. pp512 at depth 8192,
// qwen3-0.6b (GQA 4): f16 87-90 t/s with tiles of 8 heads, 101-102 with 32
// (64-128 no better); q2_0 110 with 4, 124 with 32 (docs/decisions/0005-prompt-tiles.md).
constexpr int kQueryTileHeads = 32;

// Online-softmax state of one query head over part of the keys.
struct Partial {
  float m;    // running max score
  float l;    // running sum of exp(score - m)
  float* acc; // (d) running sum of exp(score - m) * v
};

// Moves the state to the block's new maximum mx and adds the block's sum
// of weights exp(s - mx).
void fold_block(Partial& st, float mx, float sum, int d) {
  if (mx > st.m) {
    const float corr = std::exp(st.m - mx);  // exp(-inf) = 0 on the first block
    st.l *= corr;
    for (int i = 0; i < d; ++i) st.acc[i] *= corr;
  }
  st.l += sum;
  st.m = mx;
}

// Finds, for ascending positions, the segment holding each one. A paged
// main tier makes one segment per run of consecutive pages, so the list
// grows with the context; one cursor per thread keeps its storage.
struct SegmentCursor {
  std::vector<kv::Segment> seg;
  int n = 0, i = 0;
  const kv::Segment& at(int pos) {
    while (i < n && seg[(size_t)i].end <= pos) ++i;
    return seg[(size_t)i];
  }
};

// Bytes of rows [pos, pos + n) of a segment whose rows lie back to back,
// clipped to the segment; 0 where they do not lie back to back (nothing
// there is worth prefetching).
size_t segment_bytes(const kv::Segment& s, int pos, int n) {
  if (s.stride != s.codec->row_bytes()) return 0;
  return (size_t)std::max(0, std::min(n, s.end - pos)) * s.stride;
}

// The stored row of position pos of a segment.
const uint8_t* row_at(const kv::Segment& s, int pos) { return s.rows + (size_t)(pos - s.begin) * s.stride; }

// Rows [pos, pos + n) of a segment whose rows lie back to back, for a row
// kernel to ask for along the way (RowsAhead; none where they do not). The
// block loop reads K and V in turns: the V rows of a block are asked for
// while its scores are computed, so they arrive while the K rows are being
// computed on (BM_DecodeAttention, 2 threads, alternating: qwen3_4b at
// 16384 f16 63.2 -> 60.2 ms, q2_0 37.9 -> 37.2 ms; a share at a time inside
// the kernel since session 23; docs/decisions/0006-software-prefetch.md). The next
// block's K rows were asked for the same way during the value sums until
// session 24; the AMX value sums (with the softmax) then took about 1.5x
// their time without those prefetches, most likely waiting for fill
// buffers (rdtsc around the calls, rows in L1), and letting the score
// kernel prefetch its own rows a fixed distance ahead made qwen3_4b decode
// attention at 16K 7-11% (f16) and 8-14% (q2_0) faster.
RowsAhead rows_ahead(const kv::Segment& s, int pos, int n) {
  const size_t bytes = segment_bytes(s, pos, n);
  return bytes ? RowsAhead{row_at(s, pos), bytes} : RowsAhead{};
}

// Consecutive tokens of one sequence (a prompt's) that share every row they
// read: one item serves all their query heads, so each K and V row is loaded
// once per tile instead of once per token. Decode tokens are tiles of one.
struct QueryTile {
  int t0, n;  // batch tokens t0 .. t0 + n - 1, positions pos[t0] + i
};

// Tiles of at most kQueryTileHeads query heads.
std::vector<QueryTile> query_tiles(const BatchView& b, int group) {
  const int max_tokens = std::max(1, kQueryTileHeads / group);
  std::vector<QueryTile> tiles;
  for (int t = 0; t < b.n_tokens;) {
    int n = 1;
    while (n < max_tokens && t + n < b.n_tokens && b.seq[t + n] == b.seq[t] && b.pos[t + n] == b.pos[t] + n &&
           b.n_cached[t + n] == b.n_cached[t])
      ++n;
    tiles.push_back({t, n});
    t += n;
  }
  return tiles;
}

// Folds a block's scores into the states of one token's heads when only
// rows [a, e) of it are visible to the token: p is zero elsewhere, and a
// block with nothing visible leaves the states alone.
void softmax_visible(Partial* st, int heads, const float* scores, float* p, size_t bs, int n, int a, int e, int d) {
  constexpr int kHeads = 8;  // heads one call of exp_shifted_heads takes here
  float m[kHeads], m_new[kHeads], sums[kHeads];
  for (int h0 = 0; h0 < heads; h0 += kHeads) {
    const int hn = std::min(kHeads, heads - h0);
    float* ph = p + (size_t)h0 * bs;
    if (a >= e) {
      for (int h = 0; h < hn; ++h) std::fill(ph + (size_t)h * bs, ph + (size_t)h * bs + n, 0.0f);
      continue;
    }
    for (int h = 0; h < hn; ++h) m[h] = st[h0 + h].m;
    exp_shifted_heads(scores + (size_t)h0 * bs + a, bs, hn, m, ph + a, e - a, m_new, sums);
    for (int h = 0; h < hn; ++h) {
      fold_block(st[h0 + h], m_new[h], sums[h], d);
      std::fill(ph + (size_t)h * bs, ph + (size_t)h * bs + a, 0.0f);
      std::fill(ph + (size_t)h * bs + e, ph + (size_t)h * bs + n, 0.0f);
    }
  }
}

// The batch rows token t0's tile reads (its sequence's, up to the tile's
// last position, from the cache's end and the window on), in batch order.
void batch_keys(const model::LayerConfig& layer, const BatchView& b, int t0, int last_pos, std::vector<int>& keys) {
  const int seq = b.seq[t0], from = std::max(b.n_cached[t0], window_start(layer, b.pos[t0]));
  keys.clear();
  for (int j = 0; j < b.n_tokens; ++j)
    if (b.seq[j] == seq && b.pos[j] <= last_pos && b.pos[j] >= from) keys.push_back(j);
}

// Cursors over the K and V segments of (seq, KV head g) below n_cached. A
// ring that no longer holds c0 would send a cursor past its segments: refuse
// rather than read out of bounds.
void open_cursors(const kv::TierStore& ks, const kv::TierStore& vs, int il, int seq, int g, int n_cached, int c0,
                  int c1, SegmentCursor& kc, SegmentCursor& vc) {
  ks.segments(seq, g, n_cached, kc.seg);
  vs.segments(seq, g, n_cached, vc.seg);
  kc.n = (int)kc.seg.size();
  vc.n = (int)vc.seg.size();
  kc.i = vc.i = 0;
  if (c0 < c1 && (kc.n == 0 || vc.n == 0 || kc.seg[0].begin > c0 || vc.seg[0].begin > c0))
    throw Error("attention: layer " + std::to_string(il) + " no longer holds position " + std::to_string(c0) +
                " of sequence " + std::to_string(seq));
}

// One item's tile and KV head, as the helpers below need them.
struct ItemView {
  const model::LayerConfig& layer;
  const BatchView& b;
  int t0, tokens;  // the tile: batch tokens t0 .. t0 + tokens - 1
  int group, heads, g, d, kv_width, n_cached;
};

// One block of cached rows [p0, p1) through a prompt tile, asking meanwhile
// for the keys and values of the block after next, a few lines at a time
// during the block's products. qwen3-0.6b pp512 at depth 8192 against the
// per-row kernels: 1.09-1.10x with all of them asked for before each
// product, 1.14-1.15x spread; none at all was 5-15% slower
// (docs/decisions/0005-prompt-tiles.md).
void tile_cached_block(detail::PromptTile& prompt, const kv::Segment& ksg, const kv::Segment& vsg, int p0, int p1,
                       int c1) {
  const int n = p1 - p0, far = p1 + std::min(prompt.block_rows(), c1 - p1);
  const size_t kb = segment_bytes(ksg, far, std::min(prompt.block_rows(), c1 - far));
  const size_t vb = segment_bytes(vsg, far, std::min(prompt.block_rows(), c1 - far));
  prompt.add_stored_keys(*ksg.codec, row_at(ksg, p0), ksg.stride, n, p0, row_at(ksg, far), kb);
  prompt.add_stored_values(*vsg.codec, row_at(vsg, p0), vsg.stride, n, row_at(vsg, far), vb);
}

// The batch's own rows `keys` (full precision) through a prompt tile, in
// blocks of consecutive batch rows.
void tile_batch_rows(const ItemView& it, const std::vector<int>& keys, detail::PromptTile& prompt,
                     std::vector<int>& key_pos) {
  for (size_t k0 = 0; k0 < keys.size();) {
    size_t k1 = k0 + 1;
    while (k1 < keys.size() && k1 - k0 < (size_t)prompt.block_rows() && keys[k1] == keys[k1 - 1] + 1) ++k1;
    key_pos.clear();
    for (size_t k = k0; k < k1; ++k) key_pos.push_back(it.b.pos[keys[k]]);
    const size_t off = (size_t)keys[k0] * it.kv_width + (size_t)it.g * it.d;
    prompt.add_f32(it.b.k + off, it.b.v + off, (size_t)it.kv_width, (int)(k1 - k0), key_pos.data());
    k0 = k1;
  }
}

// What the per-row path scores a block into.
struct RowScratch {
  std::vector<float> scores, p, sc;
};

// The batch's own rows `keys` through the per-row kernels, into the heads'
// states st (accumulators at acc).
void row_batch_rows(const ItemView& it, const std::vector<int>& keys, const GroupQuery& gq, float scale,
                    RowScratch& s, Partial* st, float* acc) {
  const BatchView& b = it.b;
  const int group = it.group, d = it.d;
  for (size_t k0 = 0; k0 < keys.size();) {
    // A block of consecutive batch rows (one sequence's tokens are).
    size_t k1 = k0 + 1;
    while (k1 < keys.size() && k1 - k0 < (size_t)kBlock && keys[k1] == keys[k1 - 1] + 1) ++k1;
    const int n = (int)(k1 - k0);
    const size_t off = (size_t)keys[k0] * it.kv_width + (size_t)it.g * d;
    score_rows_f32(b.k + off, (size_t)it.kv_width, n, gq, scale, s.scores.data(), kBlock);
    for (int i = 0; i < it.tokens; ++i) {
      // The keys token i sees: positions lo_i .. pos. In one block they
      // are a run when its positions ascend (a prompt's do); otherwise
      // the visible scores are gathered into a run and scattered back.
      const int pos = b.pos[it.t0 + i], lo_i = std::max(it.n_cached, window_start(it.layer, pos));
      bool seen[kBlock];
      int a = n, e = 0, visible = 0;
      for (int j = 0; j < n; ++j) {
        const int kp = b.pos[keys[k0 + (size_t)j]];
        seen[j] = kp >= lo_i && kp <= pos;
        if (seen[j]) a = std::min(a, j), e = j + 1, ++visible;
      }
      Partial* sti = &st[(size_t)i * group];
      float* si = &s.scores[(size_t)i * group * kBlock];
      float* pi = &s.p[(size_t)i * group * kBlock];
      if (visible == e - a || visible == 0) {
        softmax_visible(sti, group, si, pi, kBlock, n, a, visible ? e : a, d);
        continue;
      }
      s.sc.resize((size_t)group * kBlock * 2);
      for (int h = 0; h < group; ++h)
        for (int j = 0, m = 0; j < n; ++j)
          if (seen[j]) s.sc[(size_t)h * kBlock + m++] = si[(size_t)h * kBlock + j];
      softmax_visible(sti, group, s.sc.data(), s.sc.data() + (size_t)group * kBlock, kBlock, visible, 0, visible, d);
      for (int h = 0; h < group; ++h) {
        const float* ph = s.sc.data() + (size_t)(group + h) * kBlock;
        for (int j = 0, m = 0; j < n; ++j) pi[(size_t)h * kBlock + j] = seen[j] ? ph[m++] : 0.0f;
      }
    }
    accumulate_rows_f32(b.v + off, (size_t)it.kv_width, n, s.p.data(), kBlock, it.heads, d, acc);
    k0 = k1;
  }
}

}  // namespace

void attend_fused(const model::LayerConfig& layer, int il, const kv::KvCache& cache, const BatchView& b,
                  float* out, ThreadPool& pool, const FusedOptions& options) {
  const int d = layer.head_dim, n_kv = layer.n_head_kv, group = layer.n_head / n_kv;
  const int q_width = layer.n_head * d, kv_width = n_kv * d;
  const float scale = layer.kq_scale();
  const kv::TierStore& ks = cache.k_store(il);
  const kv::TierStore& vs = cache.v_store(il);
  const std::vector<QueryTile> tiles = query_tiles(b, group);
  int max_heads = 0;  // heads of the largest tile
  for (const QueryTile& t : tiles) max_heads = std::max(max_heads, t.n * group);

  // Split long cached contexts so every thread has work even when there are
  // fewer (tile, KV head) pairs than threads (decode): flash-decoding.
  const int pairs = (int)tiles.size() * n_kv;
  // Cached positions each token reads: [first, n_cached), first > 0 only in
  // sliding-window layers.
  auto first_cached = [&](int t) { return std::min(window_start(layer, b.pos[t]), b.n_cached[t]); };
  int max_cached = 0;
  for (int t = 0; t < b.n_tokens; ++t) max_cached = std::max(max_cached, b.n_cached[t] - first_cached(t));
  int n_chunks = 1;
  if (pairs < 2 * pool.size())
    n_chunks = std::clamp((2 * pool.size() + pairs - 1) / pairs, 1, std::max(1, max_cached / kMinChunk));
  const int items = pairs * n_chunks;

  // Partial results per item: m (heads), l (heads), acc (heads, d), for up
  // to max_heads heads (token i of the tile, head h: i * group + h). With one
  // chunk per pair (every short context) an item's result is final: it is
  // normalised straight into `out` from a per-thread buffer, and there is no
  // merge, which at a short depth was a serial pass reading the other
  // threads' partials.
  const size_t part_floats = (size_t)max_heads * (d + 2);
  std::vector<float> part(n_chunks > 1 ? (size_t)items * part_floats : 0);

  // Items are handed out in small runs from a shared counter, latest tokens
  // first: in a causal prompt they read the most rows, and a static split
  // would leave the thread with the early tokens idle.
  std::atomic<size_t> next{0};
  const size_t run_len = std::max<size_t>(1, (size_t)items / (16 * (size_t)pool.size()));
  pool.run([&](int, int) {
    std::vector<float> tmp((size_t)d), tile_q((size_t)max_heads * d);
    RowScratch rs{std::vector<float>((size_t)max_heads * kMaxBlock), std::vector<float>((size_t)max_heads * kMaxBlock),
                  {}};
    std::vector<int> keys, key_pos;
    std::vector<Partial> st((size_t)max_heads);
    detail::PromptTile prompt(detail::simd_tile_kernels() ? *detail::simd_tile_kernels()
                                                          : detail::reference_tile_kernels());
    std::vector<Q2IntQuery> q2_int((size_t)(max_heads + kQ2IntQueryHeads - 1) / kQ2IntQueryHeads);
    std::vector<float> own(n_chunks > 1 ? 0 : part_floats);
    SegmentCursor kc, vc;  // reopened per item, storage kept
    auto process = [&](size_t item) {
      const int c = (int)(item % n_chunks), pair = (int)(item / n_chunks);
      const QueryTile& tile = tiles[(size_t)(pair / n_kv)];
      const int g = pair % n_kv, heads = tile.n * group;
      const int t0 = tile.t0, seq = b.seq[t0], n_cached = b.n_cached[t0];
      const int last_pos = b.pos[t0 + tile.n - 1];
      // The tile's first token sees the earliest cached row (window starts
      // grow with the position).
      const int first = first_cached(t0), span = n_cached - first;
      const int c0 = first + (int)((long long)span * c / n_chunks);
      const int c1 = first + (int)((long long)span * (c + 1) / n_chunks);

      float* base = n_chunks > 1 ? &part[item * part_floats] : own.data();
      for (int h = 0; h < heads; ++h) {
        st[(size_t)h] = {-INFINITY, 0.0f, base + 2 * heads + (size_t)h * d};
        std::fill(st[(size_t)h].acc, st[(size_t)h].acc + d, 0.0f);
      }
      // The tile's query heads of KV head g, back to back.
      const float* tq = b.q + (size_t)t0 * q_width + (size_t)g * group * d;
      if (tile.n > 1) {
        for (int i = 0; i < tile.n; ++i)
          std::copy_n(tq + (size_t)i * q_width, (size_t)group * d, tile_q.data() + (size_t)i * group * d);
        tq = tile_q.data();
      }
      // Prompt tiles take the heads-in-lanes kernels where the CPU has them,
      // for every block but those of q2_0 rows, which keep their integer
      // kernels (scores from the codes; decoded to f32 they were no faster).
      // The online-softmax state moves between the tile's lanes and st where
      // the kind of block changes (at most at the q2_0 tier's two ends).
      const bool tiles_here = options.prompt_tiles && tile.n > 1 && detail::PromptTile::available(heads, d);
      for (Q2IntQuery& iq : q2_int) iq.forget();
      // A prompt's tiles take the integer q2_0 kernels 8 heads a call; a
      // decode token with more than 8 heads a group keeps the float ones.
      const GroupQuery gq{tq, heads, d, q2_int.data(), tile.n > 1};
      const ItemView item_view{layer, b, t0, tile.n, group, heads, g, d, kv_width, n_cached};

      bool in_tile = false;  // the state is the tile's (else st's)
      float tile_m[kQueryTileHeads], tile_l[kQueryTileHeads];
      static_assert(kQueryTileHeads <= detail::kTileVectorLanes * detail::kTileMaxVectors);
      if (tiles_here) {
        int lo[kQueryTileHeads], hi[kQueryTileHeads];
        for (int hh = 0; hh < heads; ++hh) {
          const int pos = b.pos[t0 + hh / group];
          lo[hh] = window_start(layer, pos);
          hi[hh] = pos;
        }
        prompt.begin(tq, heads, d, scale, lo, hi);
        in_tile = true;
      }
      auto state_to_rows = [&] {
        if (!in_tile) return;
        prompt.finish(tile_m, tile_l, base + 2 * heads);
        for (int h = 0; h < heads; ++h) st[(size_t)h].m = tile_m[h], st[(size_t)h].l = tile_l[h];
        in_tile = false;
      };
      auto state_to_tile = [&] {
        if (in_tile) return;
        for (int h = 0; h < heads; ++h) tile_m[h] = st[(size_t)h].m, tile_l[h] = st[(size_t)h].l;
        prompt.resume(tile_m, tile_l, base + 2 * heads);
        in_tile = true;
      };

      open_cursors(ks, vs, il, seq, g, n_cached, c0, c1, kc, vc);
      for (int p0 = c0; p0 < c1;) {
        // A block never crosses a K or V segment boundary.
        const kv::Segment& ksg = kc.at(p0);
        const kv::Segment& vsg = vc.at(p0);
        if (tiles_here && ksg.codec->type() != kv::CacheType::Q2_0 && vsg.codec->type() != kv::CacheType::Q2_0) {
          state_to_tile();
          const int p1 = std::min({c1, p0 + prompt.block_rows(), ksg.end, vsg.end});
          tile_cached_block(prompt, ksg, vsg, p0, p1, c1);
          p0 = p1;
          continue;
        }
        state_to_rows();
        const bool small = ksg.codec->row_bytes() <= kSmallRowBytes && vsg.codec->row_bytes() <= kSmallRowBytes;
        const int bs = small ? kMaxBlock : kBlock;  // also the stride of scores and p
        const int p1 = std::min({c1, p0 + bs, ksg.end, vsg.end});
        const int n = p1 - p0;
        const RowsAhead v_ahead = rows_ahead(vsg, p0, n);
        score_rows(*ksg.codec, row_at(ksg, p0), ksg.stride, n, gq, scale, rs.scores.data(), (size_t)bs, tmp.data(),
                   v_ahead);
        // Token i sees cached rows from its own window start on.
        for (int i = 0; i < tile.n; ++i) {
          const int a = std::clamp(first_cached(t0 + i) - p0, 0, n);
          softmax_visible(&st[(size_t)i * group], group, &rs.scores[(size_t)i * group * bs],
                          &rs.p[(size_t)i * group * bs], (size_t)bs, n, a, n, d);
        }
        accumulate_rows(*vsg.codec, row_at(vsg, p0), vsg.stride, n, rs.p.data(), (size_t)bs, heads, base + 2 * heads,
                        tmp.data(), gq.int_chunks, /*rows_asked=*/v_ahead.bytes != 0);
        p0 = p1;
      }
      // The batch's own keys (full precision) go with the last chunk, in
      // blocks like the cached ones.
      if (c == n_chunks - 1) {
        batch_keys(layer, b, t0, last_pos, keys);
        if (tiles_here) {
          state_to_tile();
          tile_batch_rows(item_view, keys, prompt, key_pos);
        } else {
          state_to_rows();
          row_batch_rows(item_view, keys, gq, scale, rs, st.data(), base + 2 * heads);
        }
      }
      state_to_rows();
      if (n_chunks == 1) {
        for (int hh = 0; hh < heads; ++hh) {
          const int t = t0 + hh / group, h = hh % group;
          const float l = st[(size_t)hh].l, inv = l > 0 ? 1.0f / l : 0.0f;
          const float* acc = st[(size_t)hh].acc;
          float* o = out + (size_t)t * q_width + ((size_t)g * group + h) * d;
          for (int i = 0; i < d; ++i) o[i] = acc[i] * inv;
        }
        return;
      }
      for (int h = 0; h < heads; ++h) {
        base[h] = st[(size_t)h].m;
        base[heads + h] = st[(size_t)h].l;
      }
    };
    for (;;) {
      const size_t r0 = next.fetch_add(run_len, std::memory_order_relaxed);
      if (r0 >= (size_t)items) return;
      for (size_t r = r0; r < std::min((size_t)items, r0 + run_len); ++r) process((size_t)items - 1 - r);
    }
  });

  // Merge the chunks of each (tile, KV head): rescale to a common max.
  if (n_chunks == 1) return;
  for (int pair = 0; pair < pairs; ++pair) {
    const QueryTile& tile = tiles[(size_t)(pair / n_kv)];
    const int g = pair % n_kv, heads = tile.n * group;
    auto chunk = [&](int c) { return &part[(size_t)(pair * n_chunks + c) * part_floats]; };
    for (int hh = 0; hh < heads; ++hh) {
      const int t = tile.t0 + hh / group, h = hh % group;
      float M = -INFINITY;
      for (int c = 0; c < n_chunks; ++c) M = std::max(M, chunk(c)[hh]);
      float* o = out + (size_t)t * q_width + ((size_t)g * group + h) * d;
      std::fill(o, o + d, 0.0f);
      float L = 0;
      for (int c = 0; c < n_chunks; ++c) {
        const float* pc = chunk(c);
        const float m = pc[hh], l = pc[heads + hh];
        if (l == 0.0f) continue;  // an empty chunk
        const float w = std::exp(m - M);
        L += w * l;
        kernels::axpy(w, pc + 2 * heads + (size_t)hh * d, o, d);
      }
      const float inv = L > 0 ? 1.0f / L : 0.0f;
      for (int i = 0; i < d; ++i) o[i] *= inv;
    }
  }
}

}  // namespace oscar::attention
