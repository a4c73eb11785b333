// Attention of one prompt tile (consecutive tokens of a sequence, up to 32
// query heads of one KV head) over blocks of rows, with the heads in the
// lanes of vectors (tile_kernels.h). Each block of rows is turned into f32
// once (a block of 8 KiB, which stays in L1) and then serves every
// head of the tile through two small matrix products. The per-4-head row
// kernels convert each row again for every call and end each score in a
// lane sum: at depth a prompt is nearly all attention (88% of pp512 at depth
// 8192 on qwen3-0.6b), and this is where its time goes
// (docs/decisions/0005-prompt-tiles.md).
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

#include "attention/tile_kernels.h"
#include "kv/cache_type.h"

namespace oscar::attention::detail {

class PromptTile {
 public:
  // Whether prompt tiles of `heads` heads of d values can run with `simd`
  // (AttentionKernels::tile; null: the CPU has none) and the heads fit the lanes.
  static bool available(const TileKernels* simd, int heads, int d);

  explicit PromptTile(const TileKernels& k) : k_(k) {}

  // Starts a tile of `heads` query heads (q: (heads, d), back to back);
  // head h sees positions lo[h] .. hi[h]. Scores are scale * q . k.
  void begin(const float* q, int heads, int d, float scale, const int* lo, const int* hi);
  // Rows a block may hold (add_stored_keys, add_f32).
  int block_rows() const { return block_rows_; }
  // A block of n <= block_rows() stored rows at positions first, first + 1,
  // ...: first its keys (in kc's format, k_stride bytes apart), then its
  // values. Each asks, while it computes, for the `ahead` bytes of its
  // stream that a later block will read (none where ahead_bytes is 0).
  void add_stored_keys(const kv::RowCodec& kc, const uint8_t* k, size_t k_stride, int n, int first,
                       const uint8_t* ahead, size_t ahead_bytes);
  void add_stored_values(const kv::RowCodec& vc, const uint8_t* v, size_t v_stride, int n, const uint8_t* ahead,
                         size_t ahead_bytes);
  // n <= block_rows() f32 rows (the batch's own), `stride` floats apart, at
  // positions pos[0 .. n).
  void add_f32(const float* k, const float* v, size_t stride, int n, const int* pos);
  // The online-softmax state of each head: running max m[h], sum l[h] and
  // unnormalised output acc[h * d + i]. finish() writes it out; resume()
  // takes it back (from rows scored elsewhere) for the blocks that follow.
  void finish(float* m, float* l, float* acc) const;
  void resume(const float* m, const float* l, const float* acc);

 private:
  // n stored rows into kf_ as f32.
  void decode_block(const kv::RowCodec& c, const uint8_t* rows, size_t stride, int n);
  // A block's scores (f32 keys `ks` floats apart, at positions pos[j], or
  // first + j without pos), masked where a head does not see a row, through
  // the softmax step into weights; then its value sums.
  void scores(const float* keys, size_t ks, int n, const int* pos, int first, const uint8_t* ahead = nullptr,
              size_t ahead_bytes = 0);
  void values(const float* rows, size_t stride, int n, const uint8_t* ahead = nullptr, size_t ahead_bytes = 0);

  const TileKernels& k_;
  int heads_ = 0, d_ = 0, nv_ = 0, lanes_ = 0, block_rows_ = 0;
  int lo_max_ = 0, hi_min_ = 0;  // positions every head sees: lo_max_ .. hi_min_
  std::vector<int> lo_, hi_;     // (lanes): padding lanes see everything (their query is 0)
  std::vector<float> qt_;        // (d, lanes): scale * q, transposed
  std::vector<float> kf_;        // (block_rows, d): a block's keys, then its values, as f32
  std::vector<float> s_;         // (block_rows, lanes): scores, then weights
  std::vector<float> acc_;       // (d, lanes)
  std::vector<float> m_, l_;     // (lanes)
};

}  // namespace oscar::attention::detail
