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
  used_.assign((size_t)n_pages, 0);
}

PageTable PageTable::contiguous(int n_seq, int page_positions, int max_positions) {
  PageTable t(n_seq, page_positions, n_seq * ((max_positions + page_positions - 1) / page_positions), max_positions);
  t.fixed_ = true;
  const int per_seq = t.pages_for(max_positions);
  for (int s = 0; s < n_seq; ++s)
    for (int i = 0; i < per_seq; ++i) t.tables_[(size_t)s].push_back(s * per_seq + i);
  std::fill(t.used_.begin(), t.used_.end(), 1);
  t.n_free_ = 0;
  return t;
}

int PageTable::take_page(int after) {
  // The page right after the sequence's last keeps its rows one run.
  const int n = n_pages();
  if (after + 1 < n && after >= 0 && !used_[(size_t)after + 1]) return after + 1;
  for (int p = 0; p < n; ++p)
    if (!used_[(size_t)p]) return p;
  return -1;  // unreachable while n_free_ > 0
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
    used_[(size_t)p] = 1;
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
    used_[(size_t)table.back()] = 0;
    table.pop_back();
    ++n_free_;
  }
}

}  // namespace oscar::kv
