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
//
// In a unified pool a page may be listed by several sequences (a shared
// prompt prefix, docs/kv-pool.md): each page counts its references and goes
// back to the pool when the last one is given back. The table only counts;
// whoever writes a page must first make it private (make_private: a fresh
// page for the writer, whose rows the caller copies from the shared one).
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

namespace oscar::kv {

class PageTable {
 public:
  // A shared pool: pages are taken on demand, each sequence's next page
  // right after its last where free, new runs in the middle of the longest
  // free run (so a sequence written alone, and sequences growing together,
  // get consecutive pages, which their readers see as one run each).
  PageTable(int n_seq, int page_positions, int n_pages, int max_positions);
  // Every sequence owns ceil(max_positions / page_positions) pages of its
  // own from the start (never short, never shared).
  static PageTable contiguous(int n_seq, int page_positions, int max_positions);

  int n_seq() const { return (int)tables_.size(); }
  int page_positions() const { return page_; }
  int n_pages() const { return (int)refs_.size(); }
  int max_positions() const { return max_positions_; }
  int free_pages() const { return n_free_; }
  int used_pages() const { return n_pages() - n_free_; }  // a shared page counts once
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
  // Gives back seq's pages beyond what positions [0, n) need (a shared page
  // returns to the pool with its last reference).
  void shrink(int seq, int n_positions);

  // Pool pages listed by more than one sequence.
  int shared_pages() const;
  // Sequences listing pool page p (0: free).
  int refs(int page) const { return refs_[(size_t)page]; }
  // Whether page i of seq is listed by another sequence too.
  bool shared(int seq, int i) const { return refs(tables_[(size_t)seq][(size_t)i]) > 1; }
  // Lists src's first n_pages pages as dst's first pages (one more reference
  // each). dst must hold no pages; a split table shares nothing (Error).
  void share(int dst, int src, int n_pages);
  // Replaces page i of seq, if shared, by a free page of its own and returns
  // the page it replaced (whose rows the caller copies into pages(seq)[i]);
  // -1 when the page was already private. Throws Error when a copy is needed
  // and the pool has no free page (check free_pages() first).
  int make_private(int seq, int i);
  // Free pages once each sequence s keeps only its first keep[s] pages
  // (keep.size() == n_seq(); a keep beyond what s holds keeps all): pages
  // whose every reference is given back count as free.
  int free_after(const std::vector<int>& keep) const;

 private:
  // A free page for a sequence whose last page is `after` (-1: none): the
  // page right after it if free, else a page of the longest free run (its
  // first page at the pool's start, else its middle).
  int take_page(int after);

  int page_ = 0, max_positions_ = 0, n_free_ = 0;
  bool fixed_ = false;
  std::vector<std::vector<int>> tables_;  // per sequence: pool page of each of its pages
  std::vector<int> refs_;                 // per pool page: sequences listing it
};

}  // namespace oscar::kv
