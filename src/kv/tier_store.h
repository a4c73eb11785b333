// The rows of one layer's K (or V) for every sequence, in up to three tiers:
//   sink   positions [0, sink)          f16, kept forever
//   main   positions [sink, q_end)      the cache type (e.g. q2_0)
//   recent positions [q_end, n)         f16 ring of `recent` slots (slot = pos % recent)
// A token is encoded into the main type exactly once, when it leaves the
// recent window. Float cache types (f16, bf16, f32) use the main tier only.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <vector>

#include "kv/cache_type.h"

namespace oscar::kv {

// A run of consecutive positions stored contiguously in one codec.
struct Segment {
  int begin = 0, end = 0;          // positions [begin, end)
  const uint8_t* rows = nullptr;   // row of `begin`
  size_t stride = 0;               // bytes between consecutive positions
  const RowCodec* codec = nullptr;
};

class TierStore {
 public:
  TierStore(const RowCodec& main, const RowCodec& f16, int n_seq, int n_head_kv, int n_ctx, int sink,
            int recent);

  bool tiered() const { return tiered_; }
  const RowCodec& main_codec() const { return main_; }
  // Writes the rows of all heads of `pos` (x: (n_head_kv, d)), first moving
  // rows that leave the recent window into the main tier. Positions of a
  // sequence must arrive in order.
  void store(int seq, int pos, const float* x);
  // Keeps positions [0, n_keep) of `seq`.
  void truncate(int seq, int n_keep);
  // The stored positions [0, n) of (seq, head) as at most four segments.
  int segments(int seq, int head, int n, Segment out[4]) const;
  // Decodes one row (reference path, tests).
  void read(int seq, int head, int pos, float* out) const;

  // Positions of `seq` in each tier given n stored positions.
  struct TierCounts {
    int sink = 0, main = 0, recent = 0;
  };
  TierCounts counts(int seq, int n) const;
  size_t bytes_allocated() const;

 private:
  uint8_t* main_row(int seq, int head, int pos) const;
  uint8_t* sink_row(int seq, int head, int pos) const;
  uint8_t* ring_row(int seq, int head, int pos) const;
  void evict(int seq, int pos);

  RowCodec main_, f16_;
  int n_seq_, n_head_kv_, n_ctx_, sink_, recent_;
  bool tiered_;
  std::unique_ptr<uint8_t[]> main_buf_, sink_buf_, ring_buf_;
  std::vector<int> q_end_;  // per sequence: first position not in sink/main
};

}  // namespace oscar::kv
