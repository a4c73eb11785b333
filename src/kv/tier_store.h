// The rows of one layer's K (or V) for every sequence, in up to three tiers:
//   sink   positions [0, sink)          f16, kept forever
//   main   positions [sink, q_end)      the cache type (e.g. q2_0), in pages
//   recent positions [q_end, n)         f16 ring of `recent` slots (slot = pos % recent)
// A token is encoded into the main type exactly once, when it leaves the
// recent window. Float cache types (f16, bf16, f32) use the main tier only.
//
// The main tier lives in pages of a PageTable (page_table.h): the rows of
// position pos sit in the sequence's page pos / P, which may be shared with
// the table's other stores. Within the store's memory the pages of one head
// lie back to back ([head][page][P rows]), so a sequence whose pages are
// consecutive in the pool reads as one run per head, as before paging. The
// sink and recent tiers stay per sequence (small and fixed).
//
// Ring mode (sliding-window layers): the main tier is a ring of `ring` slots
// (slot = pos % ring) in the main type, without sink/recent tiers; only the
// positions [first_valid(seq), n) survive, at most `ring` of them.
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <vector>

#include "core/huge_pages.h"
#include "kv/cache_type.h"
#include "kv/page_table.h"

namespace oscar::kv {

// A run of consecutive positions stored contiguously in one codec.
struct Segment {
  int begin = 0, end = 0;          // positions [begin, end)
  const uint8_t* rows = nullptr;   // row of `begin`
  size_t stride = 0;               // bytes between consecutive positions
  const RowCodec* codec = nullptr;
};

// Where a store's rows live: in a huge-page buffer of its own, or in part of
// one that its owner shares among many stores and hands over with place().
// A KvCache does the latter: a buffer rounds up to whole 2 MiB pages, and
// with one per store and tier that rounding was about 180 MiB of a
// qwen3-4b cache at 16K (72 stores; docs/decisions/0009-huge-pages.md).
enum class RowMemory { kOwn, kPlaced };

// Committed huge-page memory for KV rows; throws Error when it cannot be had.
HugePageBuffer allocate_kv_rows(size_t bytes);

class TierStore {
 public:
  // Without `pages` (and always in ring mode) every sequence has n_ctx main
  // rows of its own, one page each.
  TierStore(const RowCodec& main, const RowCodec& f16, int n_seq, int n_head_kv, int n_ctx, int sink,
            int recent, int ring = 0, RowMemory memory = RowMemory::kOwn, const PageTable* pages = nullptr);
  // For a kPlaced store, before any other use: its rows, bytes_allocated()
  // bytes of zeros starting on a 64-byte boundary, kept alive by the caller
  // for the store's life.
  void place(uint8_t* memory);
  // A kOwn store's rows: memory given back / committed again (KvCache's
  // release_memory); nothing for a kPlaced store, whose owner does it.
  void discard_own_rows() { own_.discard(); }
  void commit_own_rows() { own_.commit(); }

  bool tiered() const { return tiered_; }
  int ring() const { return ring_slots_; }  // 0: every position has its own row
  // Ring mode: the oldest position whose row has not been overwritten.
  int first_valid(int seq) const { return ring_slots_ > 0 ? lo_valid_[(size_t)seq] : 0; }
  const RowCodec& main_codec() const { return main_; }
  // Writes the rows of all heads of `pos` (x: (n_head_kv, d)), first moving
  // rows that leave the recent window into the main tier. Positions of a
  // sequence must arrive in order.
  void store(int seq, int pos, const float* x);
  // Keeps positions [0, n_keep) of `seq`.
  void truncate(int seq, int n_keep);
  // With n positions of seq stored: the first position whose main-tier row
  // may still be written (rows below it are final until a truncation), and
  // the end of the positions that have main-tier rows.
  int main_write_start(int seq, int n) const { return tiered_ ? q_end_[(size_t)seq] : n; }
  int main_end(int seq, int n) const { return tiered_ ? std::min(q_end_[(size_t)seq], n) : n; }
  // Copies the main-tier rows of pool page `from` into page `to` (every head).
  void copy_page(int from, int to);
  // Gives empty sequence dst the per-sequence rows of src's positions [0, n)
  // that do not live in pages: the f16 sink and recent rows (tier bounds as
  // src's truncated to n), or a sliding ring's rows. Paged main rows are the
  // page table's business (shared or copied with copy_page).
  void copy_unpaged(int dst, int src, int n);
  // The stored positions [0, n) of (seq, head) as segments in position
  // order (ring mode: [max(first_valid, n - ring), n)), replacing out's
  // contents: sink, one per run of consecutive main-tier pages, the recent
  // ring in one or two.
  void segments(int seq, int head, int n, std::vector<Segment>& out) const;
  // Decodes one row (reference path, tests).
  void read(int seq, int head, int pos, float* out) const;

  // Positions of `seq` in each tier given n stored positions.
  struct TierCounts {
    int sink = 0, main = 0, recent = 0;
  };
  TierCounts counts(int seq, int n) const;
  // Bytes of the three tiers' rows, each tier starting on a cache line.
  size_t bytes_allocated() const;

  // For saving and restoring one sequence (seq_snapshot.h). The tier sizes
  // in effect (clamped to the context), and where seq's tiers split given n
  // stored positions: tiered, the first position past sink and main; ring
  // mode, the oldest position kept; otherwise 0.
  int n_head_kv() const { return n_head_kv_; }
  int sink() const { return sink_; }
  int recent() const { return recent_; }
  int split(int seq, int n) const;
  // Restores a split saved by split() (after the sequence was cleared): the
  // rows are then written through stored_row().
  void set_split(int seq, int split);
  // The bytes of pos's row in the tier that holds it (main codec or f16).
  uint8_t* stored_row(int seq, int head, int pos) const;
  size_t stored_row_bytes(int seq, int pos) const;

 private:
  uint8_t* main_row(int seq, int head, int pos) const;
  uint8_t* sink_row(int seq, int head, int pos) const;
  uint8_t* ring_row(int seq, int head, int pos) const;
  void evict(int seq, int pos);
  void main_segments(int seq, int head, int begin, int end, std::vector<Segment>& out) const;

  RowCodec main_, f16_;
  int n_seq_, n_head_kv_, n_ctx_, sink_, recent_, ring_slots_;
  int n_slots_;  // ring mode: ring rows per (seq, head)
  bool tiered_;
  // Each tier's rows, rounded up to whole cache lines.
  size_t main_bytes() const;
  size_t sink_bytes() const;
  size_t ring_bytes() const;

  std::unique_ptr<PageTable> own_pages_;  // no table given: one page per sequence
  const PageTable* pages_ = nullptr;      // the main tier's pages (not in ring mode)
  int page_ = 0;                          // positions per page
  HugePageBuffer own_;  // kOwn: the rows; kPlaced: empty
  uint8_t *main_rows_ = nullptr, *sink_rows_ = nullptr, *ring_rows_ = nullptr;
  std::vector<int> q_end_;  // per sequence: first position not in sink/main
  std::vector<int> lo_valid_;  // ring mode, per sequence: see first_valid()
};

}  // namespace oscar::kv
