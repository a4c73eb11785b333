#include "attention/prompt_tile.h"

#include <algorithm>
#include <climits>
#include <cmath>

namespace oscar::attention::detail {

namespace {
// A block's f32 keys (or values): 8 KiB, 16 rows of d128, beside the
// transposed query and the accumulators (16 KiB each at 32 heads) within the
// 48 KiB L1. qwen3-0.6b pp512 at depth 8192, against 32-row blocks: 16 rows
// 2.6-2.9% faster, 8 rows 8-13% slower (docs/decisions/0005-prompt-tiles.md).
constexpr size_t kBlockBytes = 8192;
}  // namespace

// Head dims up to 128: the transposed query and the accumulators (d x 32
// lanes each) then fit the L1 beside a block. At Gemma-4's global d512 they
// are 64 KiB each and the tile ran at 0.55x the per-row kernels
// (BM_PromptAttention, docs/decisions/0005-prompt-tiles.md).
constexpr int kMaxTileDim = 128;

bool PromptTile::available(const TileKernels* simd, int heads, int d) {
  return simd != nullptr && heads > 1 && heads <= kTileVectorLanes * kTileMaxVectors && d > 0 &&
         d <= kMaxTileDim;
}

void PromptTile::begin(const float* q, int heads, int d, float scale, const int* lo, const int* hi) {
  heads_ = heads;
  d_ = d;
  nv_ = (heads + kTileVectorLanes - 1) / kTileVectorLanes;
  lanes_ = kTileVectorLanes * nv_;
  block_rows_ = (int)std::clamp(kBlockBytes / (sizeof(float) * (size_t)d), (size_t)8, (size_t)64);
  qt_.assign((size_t)d * lanes_, 0.0f);
  for (int h = 0; h < heads; ++h)
    for (int i = 0; i < d; ++i) qt_[(size_t)i * lanes_ + h] = scale * q[(size_t)h * d + i];
  lo_.assign((size_t)lanes_, INT_MIN);
  hi_.assign((size_t)lanes_, INT_MAX);
  lo_max_ = INT_MIN;
  hi_min_ = INT_MAX;
  for (int h = 0; h < heads; ++h) {
    lo_[(size_t)h] = lo[h];
    hi_[(size_t)h] = hi[h];
    lo_max_ = std::max(lo_max_, lo[h]);
    hi_min_ = std::min(hi_min_, hi[h]);
  }
  kf_.resize((size_t)block_rows_ * d);
  s_.resize((size_t)block_rows_ * lanes_);
  acc_.assign((size_t)d * lanes_, 0.0f);
  m_.assign((size_t)lanes_, -INFINITY);
  l_.assign((size_t)lanes_, 0.0f);
}

void PromptTile::decode_block(const kv::RowCodec& c, const uint8_t* rows, size_t stride, int n) {
  for (int j = 0; j < n; ++j) c.decode(rows + (size_t)j * stride, &kf_[(size_t)j * d_]);
}

void PromptTile::add_stored_keys(const kv::RowCodec& kc, const uint8_t* k, size_t k_stride, int n, int first,
                                 const uint8_t* ahead, size_t ahead_bytes) {
  decode_block(kc, k, k_stride, n);
  scores(kf_.data(), (size_t)d_, n, nullptr, first, ahead, ahead_bytes);
}

void PromptTile::add_stored_values(const kv::RowCodec& vc, const uint8_t* v, size_t v_stride, int n,
                                   const uint8_t* ahead, size_t ahead_bytes) {
  decode_block(vc, v, v_stride, n);
  values(kf_.data(), (size_t)d_, n, ahead, ahead_bytes);
}

void PromptTile::add_f32(const float* k, const float* v, size_t stride, int n, const int* pos) {
  scores(k, stride, n, pos, 0);
  values(v, stride, n);
}

void PromptTile::scores(const float* keys, size_t ks, int n, const int* pos, int first, const uint8_t* ahead,
                        size_t ahead_bytes) {
  const size_t L = (size_t)lanes_;
  k_.gemm(keys, ks, 1, n, d_, qt_.data(), L, nv_, s_.data(), L, false, ahead, ahead_bytes);
  auto at = [&](int j) { return pos ? pos[j] : first + j; };
  int p_min = INT_MAX, p_max = INT_MIN;
  for (int j = 0; j < n; ++j) p_min = std::min(p_min, at(j)), p_max = std::max(p_max, at(j));
  if (p_min < lo_max_ || p_max > hi_min_)  // some head does not see some row
    for (int j = 0; j < n; ++j) {
      const int p = at(j);
      float* sj = &s_[(size_t)j * L];
      for (int h = 0; h < heads_; ++h)
        if (p < lo_[(size_t)h] || p > hi_[(size_t)h]) sj[h] = -INFINITY;
    }
  k_.softmax(s_.data(), n, nv_, m_.data(), l_.data(), acc_.data(), d_);
}

void PromptTile::values(const float* rows, size_t stride, int n, const uint8_t* ahead, size_t ahead_bytes) {
  const size_t L = (size_t)lanes_;
  k_.gemm(rows, 1, stride, d_, n, s_.data(), L, nv_, acc_.data(), L, true, ahead, ahead_bytes);
}

void PromptTile::finish(float* m, float* l, float* acc) const {
  for (int h = 0; h < heads_; ++h) {
    m[h] = m_[(size_t)h];
    l[h] = l_[(size_t)h];
    for (int i = 0; i < d_; ++i) acc[(size_t)h * d_ + i] = acc_[(size_t)i * lanes_ + h];
  }
}

void PromptTile::resume(const float* m, const float* l, const float* acc) {
  for (int h = 0; h < heads_; ++h) {
    m_[(size_t)h] = m[h];
    l_[(size_t)h] = l[h];
    for (int i = 0; i < d_; ++i) acc_[(size_t)i * lanes_ + h] = acc[(size_t)h * d_ + i];
  }
}

}  // namespace oscar::attention::detail
