#include <algorithm>
#include <atomic>
#include <cmath>
#include <vector>

#include "attention/attention.h"
#include "attention/attention_kernels.h"
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
void softmax_visible(const AttentionKernels& k, Partial* st, int heads, const float* scores, float* p, size_t bs, int n, int a, int e, int d) {
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
    exp_shifted_heads(k, scores + (size_t)h0 * bs + a, bs, hn, m, ph + a, e - a, m_new, sums);
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
void row_batch_rows(const AttentionKernels& k, const ItemView& it, const std::vector<int>& keys, const GroupQuery& gq, float scale,
                    RowScratch& s, Partial* st, float* acc) {
  const BatchView& b = it.b;
  const int group = it.group, d = it.d;
  for (size_t k0 = 0; k0 < keys.size();) {
    // A block of consecutive batch rows (one sequence's tokens are).
    size_t k1 = k0 + 1;
    while (k1 < keys.size() && k1 - k0 < (size_t)kBlock && keys[k1] == keys[k1 - 1] + 1) ++k1;
    const int n = (int)(k1 - k0);
    const size_t off = (size_t)keys[k0] * it.kv_width + (size_t)it.g * d;
    score_rows_f32(k, b.k + off, (size_t)it.kv_width, n, gq, scale, s.scores.data(), kBlock);
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
        softmax_visible(k, sti, group, si, pi, kBlock, n, a, visible ? e : a, d);
        continue;
      }
      s.sc.resize((size_t)group * kBlock * 2);
      for (int h = 0; h < group; ++h)
        for (int j = 0, m = 0; j < n; ++j)
          if (seen[j]) s.sc[(size_t)h * kBlock + m++] = si[(size_t)h * kBlock + j];
      softmax_visible(k, sti, group, s.sc.data(), s.sc.data() + (size_t)group * kBlock, kBlock, visible, 0, visible, d);
      for (int h = 0; h < group; ++h) {
        const float* ph = s.sc.data() + (size_t)(group + h) * kBlock;
        for (int j = 0, m = 0; j < n; ++j) pi[(size_t)h * kBlock + j] = seen[j] ? ph[m++] : 0.0f;
      }
    }
    accumulate_rows_f32(k, b.v + off, (size_t)it.kv_width, n, s.p.data(), kBlock, it.heads, d, acc);
    k0 = k1;
  }
}

// Cached positions token t reads: [first_cached, n_cached), first_cached > 0
// only in sliding-window layers.
int first_cached(const model::LayerConfig& layer, const BatchView& b, int t) {
  return std::min(window_start(layer, b.pos[t]), b.n_cached[t]);
}

// How one call's work is cut into items and where their results go. An item
// is one (query tile, KV head, chunk of the cached positions): item
// (pair * n_chunks + c), pair = tile * n_kv + g.
struct FusedPlan {
  std::vector<QueryTile> tiles;
  int d = 0, n_kv = 0, group = 0, q_width = 0, kv_width = 0;
  float scale = 0.0f;
  int max_heads = 0;  // query heads of the largest tile
  int pairs = 0, n_chunks = 1, items = 0;
  // Floats of one item's partial result: m (heads), l (heads), acc (heads,
  // d), for up to max_heads heads (token i of the tile, head h: i * group + h).
  size_t part_floats = 0;
};

// Plans the items. Long cached contexts are split into chunks so every
// thread has work even when there are fewer (tile, KV head) pairs than
// threads (decode): flash-decoding.
FusedPlan plan_items(const model::LayerConfig& layer, const BatchView& b, int threads) {
  FusedPlan p;
  p.d = layer.head_dim;
  p.n_kv = layer.n_head_kv;
  p.group = layer.n_head / p.n_kv;
  p.q_width = layer.n_head * p.d;
  p.kv_width = p.n_kv * p.d;
  p.scale = layer.kq_scale();
  p.tiles = query_tiles(b, p.group);
  for (const QueryTile& t : p.tiles) p.max_heads = std::max(p.max_heads, t.n * p.group);
  p.pairs = (int)p.tiles.size() * p.n_kv;
  int max_cached = 0;
  for (int t = 0; t < b.n_tokens; ++t) max_cached = std::max(max_cached, b.n_cached[t] - first_cached(layer, b, t));
  if (p.pairs < 2 * threads)
    p.n_chunks = std::clamp((2 * threads + p.pairs - 1) / p.pairs, 1, std::max(1, max_cached / kMinChunk));
  p.items = p.pairs * p.n_chunks;
  p.part_floats = (size_t)p.max_heads * (p.d + 2);
  return p;
}

// What every item of one call reads and writes.
struct FusedCall {
  const model::LayerConfig& layer;
  int il;
  const kv::TierStore& ks;
  const kv::TierStore& vs;
  const BatchView& b;
  const AttentionKernels& kernels;
  const FusedOptions& options;
  const FusedPlan& plan;
  float* out;   // (n_tokens, n_head * d)
  float* part;  // (items, part_floats) when n_chunks > 1, else null
};

// The tile, KV head and cached positions [c0, c1) of one item.
struct ItemSpan {
  int chunk, g, t0, tokens, heads, seq, n_cached, last_pos, c0, c1;
};

ItemSpan locate_item(const FusedCall& call, size_t item) {
  const FusedPlan& p = call.plan;
  const BatchView& b = call.b;
  const int c = (int)(item % p.n_chunks), pair = (int)(item / p.n_chunks);
  const QueryTile& tile = p.tiles[(size_t)(pair / p.n_kv)];
  ItemSpan s{};
  s.chunk = c;
  s.g = pair % p.n_kv;
  s.t0 = tile.t0;
  s.tokens = tile.n;
  s.heads = tile.n * p.group;
  s.seq = b.seq[tile.t0];
  s.n_cached = b.n_cached[tile.t0];
  s.last_pos = b.pos[tile.t0 + tile.n - 1];
  // The tile's first token sees the earliest cached row (window starts
  // grow with the position).
  const int first = first_cached(call.layer, b, tile.t0), span = s.n_cached - first;
  s.c0 = first + (int)((long long)span * c / p.n_chunks);
  s.c1 = first + (int)((long long)span * (c + 1) / p.n_chunks);
  return s;
}

// One thread's scratch, and the steps of one item: score its cached rows
// block by block, then the batch's own rows, folding each block into an
// online softmax per query head; then write the result (final with one
// chunk, else a partial for merge_chunks).
class ItemWorker {
 public:
  explicit ItemWorker(const FusedCall& call)
      : call_(call),
        tmp_((size_t)call.plan.d),
        tile_q_((size_t)call.plan.max_heads * call.plan.d),
        rs_{std::vector<float>((size_t)call.plan.max_heads * kMaxBlock),
            std::vector<float>((size_t)call.plan.max_heads * kMaxBlock),
            {}},
        st_((size_t)call.plan.max_heads),
        prompt_(call.kernels.tile ? *call.kernels.tile : detail::reference_tile_kernels()),
        q2_int_((size_t)(call.plan.max_heads + kQ2IntQueryHeads - 1) / kQ2IntQueryHeads),
        own_(call.plan.n_chunks > 1 ? 0 : call.plan.part_floats) {}

  void process(size_t item) {
    const FusedPlan& p = call_.plan;
    const ItemSpan s = locate_item(call_, item);
    base_ = p.n_chunks > 1 ? call_.part + item * p.part_floats : own_.data();
    acc_ = base_ + 2 * s.heads;
    for (int h = 0; h < s.heads; ++h) {
      st_[(size_t)h] = {-INFINITY, 0.0f, acc_ + (size_t)h * p.d};
      std::fill(st_[(size_t)h].acc, st_[(size_t)h].acc + p.d, 0.0f);
    }
    const float* tq = gather_queries(s);
    // Prompt tiles take the heads-in-lanes kernels where the CPU has them,
    // for every block but those of q2_0 rows, which keep their integer
    // kernels (scores from the codes; decoded to f32 they were no faster).
    // The online-softmax state moves between the tile's lanes and st_ where
    // the kind of block changes (at most at the q2_0 tier's two ends).
    tiles_here_ = call_.options.prompt_tiles && s.tokens > 1 &&
                  detail::PromptTile::available(call_.kernels.tile, s.heads, p.d);
    for (Q2IntQuery& iq : q2_int_) iq.forget();
    // A prompt's tiles take the integer q2_0 kernels 8 heads a call; a
    // decode token with more than 8 heads a group keeps the float ones.
    const GroupQuery gq{tq, s.heads, p.d, q2_int_.data(), s.tokens > 1};
    in_tile_ = false;
    if (tiles_here_) begin_tile(s, tq);
    cached_rows(s, gq);
    // The batch's own keys (full precision) go with the last chunk, in
    // blocks like the cached ones.
    if (s.chunk == p.n_chunks - 1) batch_rows(s, gq);
    state_to_rows(s.heads);
    finish(s);
  }

 private:
  // The tile's query heads of KV head g, back to back: (heads, d), head
  // i * group + h for token i. A single token's are already so in b.q.
  const float* gather_queries(const ItemSpan& s) {
    const FusedPlan& p = call_.plan;
    const float* tq = call_.b.q + (size_t)s.t0 * p.q_width + (size_t)s.g * p.group * p.d;
    if (s.tokens == 1) return tq;
    for (int i = 0; i < s.tokens; ++i)
      std::copy_n(tq + (size_t)i * p.q_width, (size_t)p.group * p.d, tile_q_.data() + (size_t)i * p.group * p.d);
    return tile_q_.data();
  }

  // Starts the prompt tile: head hh sees positions [window start, its own].
  void begin_tile(const ItemSpan& s, const float* tq) {
    static_assert(kQueryTileHeads <= detail::kTileVectorLanes * detail::kTileMaxVectors);
    int lo[kQueryTileHeads], hi[kQueryTileHeads];
    for (int hh = 0; hh < s.heads; ++hh) {
      const int pos = call_.b.pos[s.t0 + hh / call_.plan.group];
      lo[hh] = window_start(call_.layer, pos);
      hi[hh] = pos;
    }
    prompt_.begin(tq, s.heads, call_.plan.d, call_.plan.scale, lo, hi);
    in_tile_ = true;
  }

  // Moves the online-softmax state from the tile's lanes to st_ and back.
  void state_to_rows(int heads) {
    if (!in_tile_) return;
    prompt_.finish(tile_m_, tile_l_, acc_);
    for (int h = 0; h < heads; ++h) st_[(size_t)h].m = tile_m_[h], st_[(size_t)h].l = tile_l_[h];
    in_tile_ = false;
  }
  void state_to_tile(int heads) {
    if (in_tile_) return;
    for (int h = 0; h < heads; ++h) tile_m_[h] = st_[(size_t)h].m, tile_l_[h] = st_[(size_t)h].l;
    prompt_.resume(tile_m_, tile_l_, acc_);
    in_tile_ = true;
  }

  // The item's cached positions [c0, c1), in blocks that never cross a K or
  // V segment boundary.
  void cached_rows(const ItemSpan& s, const GroupQuery& gq) {
    open_cursors(call_.ks, call_.vs, call_.il, s.seq, s.g, s.n_cached, s.c0, s.c1, kc_, vc_);
    for (int p0 = s.c0; p0 < s.c1;) {
      const kv::Segment& ksg = kc_.at(p0);
      const kv::Segment& vsg = vc_.at(p0);
      if (tiles_here_ && ksg.codec->type() != kv::CacheType::Q2_0 && vsg.codec->type() != kv::CacheType::Q2_0) {
        state_to_tile(s.heads);
        const int p1 = std::min({s.c1, p0 + prompt_.block_rows(), ksg.end, vsg.end});
        tile_cached_block(prompt_, ksg, vsg, p0, p1, s.c1);
        p0 = p1;
        continue;
      }
      state_to_rows(s.heads);
      p0 = row_cached_block(s, gq, ksg, vsg, p0);
    }
  }

  // One block of cached rows from p0 through the per-row kernels; returns
  // where it ended. Scores and weights: rs_.scores, rs_.p (heads, bs).
  int row_cached_block(const ItemSpan& s, const GroupQuery& gq, const kv::Segment& ksg, const kv::Segment& vsg,
                       int p0) {
    const FusedPlan& p = call_.plan;
    const bool small = ksg.codec->row_bytes() <= kSmallRowBytes && vsg.codec->row_bytes() <= kSmallRowBytes;
    const int bs = small ? kMaxBlock : kBlock;  // also the stride of scores and p
    const int p1 = std::min({s.c1, p0 + bs, ksg.end, vsg.end});
    const int n = p1 - p0;
    const RowsAhead v_ahead = rows_ahead(vsg, p0, n);
    score_rows(call_.kernels, *ksg.codec, row_at(ksg, p0), ksg.stride, n, gq, p.scale, rs_.scores.data(), (size_t)bs, tmp_.data(),
               v_ahead);
    // Token i sees cached rows from its own window start on.
    for (int i = 0; i < s.tokens; ++i) {
      const int a = std::clamp(first_cached(call_.layer, call_.b, s.t0 + i) - p0, 0, n);
      softmax_visible(call_.kernels, &st_[(size_t)i * p.group], p.group, &rs_.scores[(size_t)i * p.group * bs],
                      &rs_.p[(size_t)i * p.group * bs], (size_t)bs, n, a, n, p.d);
    }
    accumulate_rows(call_.kernels, *vsg.codec, row_at(vsg, p0), vsg.stride, n, rs_.p.data(), (size_t)bs, s.heads, acc_, tmp_.data(),
                    gq.int_chunks, /*rows_asked=*/v_ahead.bytes != 0);
    return p1;
  }

  // The batch's own rows the tile sees, through the tile or the row kernels.
  void batch_rows(const ItemSpan& s, const GroupQuery& gq) {
    const FusedPlan& p = call_.plan;
    batch_keys(call_.layer, call_.b, s.t0, s.last_pos, keys_);
    const ItemView view{call_.layer, call_.b, s.t0, s.tokens, p.group, s.heads, s.g, p.d, p.kv_width, s.n_cached};
    if (tiles_here_) {
      state_to_tile(s.heads);
      tile_batch_rows(view, keys_, prompt_, key_pos_);
    } else {
      state_to_rows(s.heads);
      row_batch_rows(call_.kernels, view, keys_, gq, p.scale, rs_, st_.data(), acc_);
    }
  }

  // With one chunk the item's result is final: normalised straight into
  // out, with no merge (which at a short depth was a serial pass reading the
  // other threads' partials). Otherwise m and l go beside acc in the
  // item's partial, base_ = (m (heads), l (heads), acc (heads, d)).
  void finish(const ItemSpan& s) {
    const FusedPlan& p = call_.plan;
    if (p.n_chunks == 1) {
      for (int hh = 0; hh < s.heads; ++hh) {
        const int t = s.t0 + hh / p.group, h = hh % p.group;
        const float l = st_[(size_t)hh].l, inv = l > 0 ? 1.0f / l : 0.0f;
        const float* acc = st_[(size_t)hh].acc;
        float* o = call_.out + (size_t)t * p.q_width + ((size_t)s.g * p.group + h) * p.d;
        for (int i = 0; i < p.d; ++i) o[i] = acc[i] * inv;
      }
      return;
    }
    for (int h = 0; h < s.heads; ++h) {
      base_[h] = st_[(size_t)h].m;
      base_[s.heads + h] = st_[(size_t)h].l;
    }
  }

  const FusedCall& call_;
  std::vector<float> tmp_;     // (d) a decoded row
  std::vector<float> tile_q_;  // (max_heads, d) a tile's queries
  RowScratch rs_;              // scores, p: (max_heads, kMaxBlock)
  std::vector<int> keys_, key_pos_;
  std::vector<Partial> st_;    // (max_heads) the online softmax of each head
  detail::PromptTile prompt_;
  std::vector<Q2IntQuery> q2_int_;
  std::vector<float> own_;     // (part_floats) the item's result with one chunk
  SegmentCursor kc_, vc_;      // reopened per item, storage kept
  float* base_ = nullptr;      // the item's (m, l, acc) floats
  float* acc_ = nullptr;       // base_ + 2 * heads: (heads, d)
  bool tiles_here_ = false;    // the item takes the prompt tile for non-q2_0 blocks
  bool in_tile_ = false;       // the state is the tile's (else st_'s)
  float tile_m_[kQueryTileHeads], tile_l_[kQueryTileHeads];
};

// Merges the chunks of each (tile, KV head): rescales their partial
// softmaxes to a common max and normalises into out.
void merge_chunks(const FusedPlan& p, const float* part, float* out) {
  for (int pair = 0; pair < p.pairs; ++pair) {
    const QueryTile& tile = p.tiles[(size_t)(pair / p.n_kv)];
    const int g = pair % p.n_kv, heads = tile.n * p.group;
    auto chunk = [&](int c) { return &part[(size_t)(pair * p.n_chunks + c) * p.part_floats]; };
    for (int hh = 0; hh < heads; ++hh) {
      const int t = tile.t0 + hh / p.group, h = hh % p.group;
      float M = -INFINITY;
      for (int c = 0; c < p.n_chunks; ++c) M = std::max(M, chunk(c)[hh]);
      float* o = out + (size_t)t * p.q_width + ((size_t)g * p.group + h) * p.d;
      std::fill(o, o + p.d, 0.0f);
      float L = 0;
      for (int c = 0; c < p.n_chunks; ++c) {
        const float* pc = chunk(c);
        const float m = pc[hh], l = pc[heads + hh];
        if (l == 0.0f) continue;  // an empty chunk
        const float w = std::exp(m - M);
        L += w * l;
        kernels::axpy(w, pc + 2 * heads + (size_t)hh * p.d, o, p.d);
      }
      const float inv = L > 0 ? 1.0f / L : 0.0f;
      for (int i = 0; i < p.d; ++i) o[i] *= inv;
    }
  }
}

}  // namespace

void attend_fused(const model::LayerConfig& layer, int il, const kv::KvCache& cache, const BatchView& b,
                  float* out, ThreadPool& pool, const AttentionKernels& kernels, const FusedOptions& options) {
  const FusedPlan plan = plan_items(layer, b, pool.size());
  std::vector<float> part(plan.n_chunks > 1 ? (size_t)plan.items * plan.part_floats : 0);
  const FusedCall call{layer, il, cache.k_store(il), cache.v_store(il), b, kernels, options, plan, out,
                       part.empty() ? nullptr : part.data()};
  // Items are handed out in small runs from a shared counter, latest tokens
  // first: in a causal prompt they read the most rows, and a static split
  // would leave the thread with the early tokens idle.
  std::atomic<size_t> next{0};
  const size_t items = (size_t)plan.items;
  const size_t run_len = std::max<size_t>(1, items / (16 * (size_t)pool.size()));
  pool.run([&](int, int) {
    ItemWorker worker(call);
    for (;;) {
      const size_t r0 = next.fetch_add(run_len, std::memory_order_relaxed);
      if (r0 >= items) return;
      for (size_t r = r0; r < std::min(items, r0 + run_len); ++r) worker.process(items - 1 - r);
    }
  });
  if (plan.n_chunks > 1) merge_chunks(plan, part.data(), out);
}

}  // namespace oscar::attention
