// The KV pool's bookkeeping: positions of every sequence live in fixed-size
// pages of `page_positions` positions, taken from one pool of `n_pages`
// pages and listed in a per-sequence page table (page i of a sequence holds
// its positions [i * P, (i + 1) * P)). The table is shared by every paged
// store of a KvCache (all global layers, K and V): all of them hold the same
// positions of a sequence, so one allocation serves them all, and each store
// keeps the rows of page j at the same index j of its own memory.
//
// A sequence may hold at most `max_positions`; the pool decides how many
// sequences can be that long at once (a unified pool), or gives every
// sequence its own fixed pages (contiguous(): the old split layout).
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

namespace oscar::kv {

class PageTable {
 public:
  // A shared pool: pages are taken on demand, lowest free first (a sequence
  // written alone gets consecutive pages, which its readers see as one run).
  PageTable(int n_seq, int page_positions, int n_pages, int max_positions);
  // Every sequence owns ceil(max_positions / page_positions) pages of its
  // own from the start (never short, never shared).
  static PageTable contiguous(int n_seq, int page_positions, int max_positions);

  int n_seq() const { return (int)tables_.size(); }
  int page_positions() const { return page_; }
  int n_pages() const { return (int)used_.size(); }
  int max_positions() const { return max_positions_; }
  int free_pages() const { return n_free_; }
  bool fixed() const { return fixed_; }
  // Pages a sequence of n positions occupies.
  int pages_for(int n_positions) const { return (n_positions + page_ - 1) / page_; }
  int pages_held(int seq) const { return (int)tables_[(size_t)seq].size(); }

  // The pool page holding position pos of seq (pos must be covered).
  int page_of(int seq, int pos) const { return tables_[(size_t)seq][(size_t)(pos / page_)]; }
  const std::vector<int>& pages(int seq) const { return tables_[(size_t)seq]; }

  // Makes seq's table cover positions [0, n). Takes nothing and returns false
  // when the pool has too few free pages; throws Error beyond max_positions.
  bool ensure(int seq, int n_positions);
  // Gives back seq's pages beyond what positions [0, n) need.
  void shrink(int seq, int n_positions);

 private:
  int take_page(int after);  // a free page, preferring the one after `after`

  int page_ = 0, max_positions_ = 0, n_free_ = 0;
  bool fixed_ = false;
  std::vector<std::vector<int>> tables_;  // per sequence: pool page of each of its pages
  std::vector<uint8_t> used_;             // per pool page
};

}  // namespace oscar::kv
