#include "kv/page_table.h"

#include <algorithm>
#include <string>

#include "core/error.h"

namespace oscar::kv {

PageTable::PageTable(int n_seq, int page_positions, int n_pages, int max_positions)
    : page_(page_positions), max_positions_(max_positions), n_free_(n_pages) {
  require(n_seq >= 1 && page_positions >= 1 && n_pages >= 0 && max_positions >= 1,
          "KV pool: invalid page table shape");
  tables_.resize((size_t)n_seq);
  refs_.assign((size_t)n_pages, 0);
}

PageTable PageTable::contiguous(int n_seq, int page_positions, int max_positions) {
  PageTable t(n_seq, page_positions, n_seq * ((max_positions + page_positions - 1) / page_positions), max_positions);
  t.fixed_ = true;
  const int per_seq = t.pages_for(max_positions);
  for (int s = 0; s < n_seq; ++s)
    for (int i = 0; i < per_seq; ++i) t.tables_[(size_t)s].push_back(s * per_seq + i);
  std::fill(t.refs_.begin(), t.refs_.end(), 1);
  t.n_free_ = 0;
  return t;
}

int PageTable::take_page(int after) {
  // The page right after the sequence's last keeps its rows one run: the
  // attention reads one segment per run, and a run per page costs decode
  // 5-10% at depth (bench/history/pool-ab-2026-12-05.md).
  const int n = n_pages();
  if (after + 1 < n && after >= 0 && refs_[(size_t)after + 1] == 0) return after + 1;
  // Otherwise start a new run where it has the most room: in the longest
  // free run, at its middle when a page precedes it (that page's sequence
  // may still grow into the first half), at its start at the pool's start.
  // Sequences that grow together then take long runs each instead of
  // alternating pages.
  int best = -1, best_len = 0;
  for (int p = 0; p < n;) {
    if (refs_[(size_t)p] != 0) {
      ++p;
      continue;
    }
    int q = p;
    while (q < n && refs_[(size_t)q] == 0) ++q;
    if (q - p > best_len) {
      best = p;
      best_len = q - p;
    }
    p = q;
  }
  if (best <= 0) return best;  // -1: unreachable while n_free_ > 0
  return best + best_len / 2;
}

bool PageTable::ensure(int seq, int n_positions) {
  require(n_positions <= max_positions_, [&] {
    return "KV pool: " + std::to_string(n_positions) + " positions exceed the " + std::to_string(max_positions_) +
           " a sequence may hold";
  });
  auto& table = tables_[(size_t)seq];
  const int need = pages_for(n_positions) - (int)table.size();
  if (need <= 0) return true;
  if (need > n_free_) return false;
  for (int i = 0; i < need; ++i) {
    const int p = take_page(table.empty() ? -1 : table.back());
    refs_[(size_t)p] = 1;
    table.push_back(p);
  }
  n_free_ -= need;
  return true;
}

void PageTable::shrink(int seq, int n_positions) {
  if (fixed_) return;  // a split cache's pages belong to their sequence for good
  auto& table = tables_[(size_t)seq];
  const size_t keep = (size_t)pages_for(std::max(0, n_positions));
  while (table.size() > keep) {
    if (--refs_[(size_t)table.back()] == 0) ++n_free_;
    table.pop_back();
  }
}

void PageTable::share(int dst, int src, int n_pages) {
  require(!fixed_, "KV pool: a split cache's pages cannot be shared");
  require(dst != src && tables_[(size_t)dst].empty(), "KV pool: pages can only be shared into an empty sequence");
  const auto& from = tables_[(size_t)src];
  require(n_pages >= 0 && n_pages <= (int)from.size(), "KV pool: sharing more pages than the sequence holds");
  for (int i = 0; i < n_pages; ++i) {
    ++refs_[(size_t)from[(size_t)i]];
    tables_[(size_t)dst].push_back(from[(size_t)i]);
  }
}

int PageTable::make_private(int seq, int i) {
  auto& table = tables_[(size_t)seq];
  const int old = table[(size_t)i];
  if (refs_[(size_t)old] <= 1) return -1;
  require(n_free_ > 0, "KV pool: no free page to copy a shared page into");
  const int p = take_page(i > 0 ? table[(size_t)i - 1] : -1);
  refs_[(size_t)p] = 1;
  --n_free_;
  --refs_[(size_t)old];  // still >= 1: another sequence lists it
  table[(size_t)i] = p;
  return old;
}

int PageTable::shared_pages() const {
  int n = 0;
  for (int r : refs_) n += r > 1 ? 1 : 0;
  return n;
}

int PageTable::free_after(const std::vector<int>& keep) const {
  if (fixed_) return 0;
  require((int)keep.size() == n_seq(), "KV pool: one kept count per sequence");
  std::vector<int> released(refs_.size(), 0);
  for (size_t s = 0; s < tables_.size(); ++s)
    for (size_t i = (size_t)std::max(0, keep[s]); i < tables_[s].size(); ++i) ++released[(size_t)tables_[s][i]];
  int n = n_free_;
  for (size_t p = 0; p < refs_.size(); ++p) n += refs_[p] > 0 && released[p] == refs_[p] ? 1 : 0;
  return n;
}

}  // namespace oscar::kv
