#include "kv/tier_store.h"

#include <algorithm>
#include <cstring>
#include <string>
#include <vector>

#include "core/error.h"

namespace oscar::kv {

TierStore::TierStore(const RowCodec& main, const RowCodec& f16, int n_seq, int n_head_kv, int n_ctx,
                     int sink, int recent, int ring, RowMemory memory, const PageTable* pages)
    : main_(main),
      f16_(f16),
      n_seq_(n_seq),
      n_head_kv_(n_head_kv),
      n_ctx_(n_ctx),
      sink_(is_quantized(main.type()) && ring == 0 ? std::min(sink, n_ctx) : 0),
      recent_(is_quantized(main.type()) && ring == 0 ? std::min(recent, n_ctx) : 0),
      ring_slots_(ring > 0 ? std::min(ring, n_ctx) : 0),
      n_slots_(ring_slots_ > 0 ? ring_slots_ : n_ctx),
      tiered_(is_quantized(main.type()) && ring == 0 && (sink > 0 || recent > 0)) {
  q_end_.assign((size_t)n_seq, sink_);
  lo_valid_.assign((size_t)n_seq, 0);
  if (ring_slots_ == 0) {
    if (!pages) {
      own_pages_ = std::make_unique<PageTable>(PageTable::contiguous(n_seq, n_ctx, n_ctx));
      pages = own_pages_.get();
    }
    require(pages->n_seq() == n_seq && pages->max_positions() >= n_ctx, "KV store: page table does not match");
    pages_ = pages;
    page_ = pages->page_positions();
  }
  if (memory == RowMemory::kPlaced) return;
  own_ = allocate_kv_rows(bytes_allocated());
  place(own_.data());
}

HugePageBuffer allocate_kv_rows(size_t bytes) {
  // Decode streams the tiers, hence huge pages. They are committed now:
  // faulting them in as positions arrive cost qwen3-0.6b about 1 ms per
  // decoded token (docs/decisions/0009-huge-pages.md), and a cache that does not
  // fit should fail here, not in the middle of a request.
  HugePageBuffer b = HugePageBuffer::allocate(bytes);
  if (bytes > 0 && !b.data()) throw Error("cannot allocate " + std::to_string(bytes >> 20) + " MiB for the KV cache");
  b.commit();
  return b;
}

namespace {
size_t whole_lines(size_t bytes) { return (bytes + 63) & ~size_t(63); }
}  // namespace

size_t TierStore::main_bytes() const {
  if (ring_slots_ > 0) return whole_lines((size_t)n_seq_ * n_head_kv_ * n_slots_ * main_.row_bytes());
  return whole_lines((size_t)n_head_kv_ * pages_->n_pages() * page_ * main_.row_bytes());
}
size_t TierStore::sink_bytes() const { return whole_lines((size_t)n_seq_ * n_head_kv_ * sink_ * f16_.row_bytes()); }
size_t TierStore::ring_bytes() const { return whole_lines((size_t)n_seq_ * n_head_kv_ * recent_ * f16_.row_bytes()); }

void TierStore::place(uint8_t* memory) {
  main_rows_ = memory;
  sink_rows_ = memory + main_bytes();
  ring_rows_ = sink_rows_ + sink_bytes();
}

uint8_t* TierStore::main_row(int seq, int head, int pos) const {
  if (ring_slots_ > 0)
    return main_rows_ + (((size_t)seq * n_head_kv_ + head) * n_slots_ + pos % ring_slots_) * main_.row_bytes();
  const size_t page = (size_t)head * pages_->n_pages() + pages_->page_of(seq, pos);
  return main_rows_ + (page * page_ + pos % page_) * main_.row_bytes();
}
uint8_t* TierStore::sink_row(int seq, int head, int pos) const {
  return sink_rows_ + (((size_t)seq * n_head_kv_ + head) * sink_ + pos) * f16_.row_bytes();
}
uint8_t* TierStore::ring_row(int seq, int head, int pos) const {
  return ring_rows_ + (((size_t)seq * n_head_kv_ + head) * recent_ + pos % recent_) * f16_.row_bytes();
}

void TierStore::evict(int seq, int pos) {
  // The f16 row is decoded exactly and encoded into the main type once.
  float tmp[1024];  // head dims are at most 1024 (checked at model load)
  for (int h = 0; h < n_head_kv_; ++h) {
    f16_.decode(ring_row(seq, h, pos), tmp);
    main_.encode(tmp, main_row(seq, h, pos));
  }
}

void TierStore::store(int seq, int pos, const float* x) {
  const int d = main_.dim();
  if (!tiered_) {
    for (int h = 0; h < n_head_kv_; ++h) main_.encode(x + (size_t)h * d, main_row(seq, h, pos));
    // The slot now holds pos: position pos - ring is gone.
    if (ring_slots_ > 0) lo_valid_[(size_t)seq] = std::max(lo_valid_[(size_t)seq], pos - ring_slots_ + 1);
    return;
  }
  int& q_end = q_end_[(size_t)seq];
  if (pos < sink_) {
    for (int h = 0; h < n_head_kv_; ++h) f16_.encode(x + (size_t)h * d, sink_row(seq, h, pos));
    return;
  }
  if (recent_ == 0) {
    for (int h = 0; h < n_head_kv_; ++h) main_.encode(x + (size_t)h * d, main_row(seq, h, pos));
    q_end = pos + 1;
    return;
  }
  // Rows older than the window move to the main tier before their ring slot
  // is reused.
  while (pos - q_end >= recent_) evict(seq, q_end++);
  for (int h = 0; h < n_head_kv_; ++h) f16_.encode(x + (size_t)h * d, ring_row(seq, h, pos));
}

void TierStore::truncate(int seq, int n_keep) {
  // Ring rows below n_keep stay valid; none below first_valid come back.
  int& lo = lo_valid_[(size_t)seq];
  lo = std::min(lo, n_keep);
  int& q_end = q_end_[(size_t)seq];
  q_end = std::max(sink_, std::min(q_end, n_keep));
}

void TierStore::copy_page(int from, int to) {
  const size_t bytes = (size_t)page_ * main_.row_bytes();
  for (int h = 0; h < n_head_kv_; ++h) {
    const size_t base = (size_t)h * pages_->n_pages();
    std::memcpy(main_rows_ + (base + (size_t)to) * bytes, main_rows_ + (base + (size_t)from) * bytes, bytes);
  }
}

void TierStore::copy_unpaged(int dst, int src, int n) {
  // Ring slots are pos % size in both sequences: copy runs between wraps.
  auto copy_slots = [&](int begin, int end, int size, size_t row, auto row_of) {
    for (int p = begin; p < end;) {
      const int e = std::min(end, p + (size - p % size));
      for (int h = 0; h < n_head_kv_; ++h) std::memcpy(row_of(dst, h, p), row_of(src, h, p), (size_t)(e - p) * row);
      p = e;
    }
  };
  if (ring_slots_ > 0) {
    const int lo = std::min(n, std::max(lo_valid_[(size_t)src], n - ring_slots_));
    copy_slots(lo, n, ring_slots_, main_.row_bytes(),
               [this](int q, int h, int p) { return main_row(q, h, p); });
    lo_valid_[(size_t)dst] = lo;
    return;
  }
  if (!tiered_) return;
  const int q_end = std::max(sink_, std::min(q_end_[(size_t)src], n));
  q_end_[(size_t)dst] = q_end;
  const int s_end = std::min(n, sink_);
  for (int h = 0; h < n_head_kv_; ++h)
    if (s_end > 0) std::memcpy(sink_row(dst, h, 0), sink_row(src, h, 0), (size_t)s_end * f16_.row_bytes());
  if (recent_ > 0)
    copy_slots(q_end, n, recent_, f16_.row_bytes(), [this](int q, int h, int p) { return ring_row(q, h, p); });
}

TierStore::TierCounts TierStore::counts(int seq, int n) const {
  TierCounts c;
  if (!tiered_) {
    c.main = ring_slots_ > 0 ? std::max(0, n - std::max(lo_valid_[(size_t)seq], n - ring_slots_)) : n;
    return c;
  }
  const int q_end = q_end_[(size_t)seq];
  c.sink = std::min(n, sink_);
  c.main = std::max(0, std::min(n, q_end) - sink_);
  c.recent = std::max(0, n - std::max(q_end, sink_));
  return c;
}

void TierStore::main_segments(int seq, int head, int begin, int end, std::vector<Segment>& out) const {
  // One segment per run of pages that follow each other in the pool.
  const size_t stride = main_.row_bytes();
  const std::vector<int>& pages = pages_->pages(seq);
  for (int p = begin; p < end;) {
    int i = p / page_, e = std::min(end, (i + 1) * page_);
    while (e < end && pages[(size_t)i + 1] == pages[(size_t)i] + 1) e = std::min(end, (++i + 1) * page_);
    out.push_back({p, e, main_row(seq, head, p), stride, &main_});
    p = e;
  }
}

void TierStore::segments(int seq, int head, int n, std::vector<Segment>& out) const {
  out.clear();
  if (ring_slots_ > 0) {
    int p = std::max(lo_valid_[(size_t)seq], n - ring_slots_);
    while (p < n) {  // split where the slot index returns to 0
      const int e = std::min(n, p + (ring_slots_ - p % ring_slots_));
      out.push_back({p, e, main_row(seq, head, p), main_.row_bytes(), &main_});
      p = e;
    }
    return;
  }
  if (!tiered_) return main_segments(seq, head, 0, n, out);
  const int q_end = q_end_[(size_t)seq];
  const int s_end = std::min(n, sink_);
  if (s_end > 0) out.push_back({0, s_end, sink_row(seq, head, 0), f16_.row_bytes(), &f16_});
  main_segments(seq, head, sink_, std::min(n, q_end), out);
  int p = std::max(q_end, sink_);
  while (p < n) {
    // The ring wraps: split where slot index returns to 0.
    const int slot = p % recent_;
    const int e = std::min(n, p + (recent_ - slot));
    out.push_back({p, e, ring_row(seq, head, p), f16_.row_bytes(), &f16_});
    p = e;
  }
}

void TierStore::read(int seq, int head, int pos, float* out) const {
  if (!tiered_) return main_.decode(main_row(seq, head, pos), out);
  if (pos < sink_) return f16_.decode(sink_row(seq, head, pos), out);
  if (pos < q_end_[(size_t)seq]) return main_.decode(main_row(seq, head, pos), out);
  f16_.decode(ring_row(seq, head, pos), out);
}

size_t TierStore::bytes_allocated() const { return main_bytes() + sink_bytes() + ring_bytes(); }

int TierStore::split(int seq, int n) const {
  if (ring_slots_ > 0) return std::max(lo_valid_[(size_t)seq], n - ring_slots_);
  return tiered_ ? q_end_[(size_t)seq] : 0;
}

void TierStore::set_split(int seq, int split) {
  if (ring_slots_ > 0) lo_valid_[(size_t)seq] = split;
  else if (tiered_) q_end_[(size_t)seq] = split;
}

uint8_t* TierStore::stored_row(int seq, int head, int pos) const {
  if (!tiered_) return main_row(seq, head, pos);
  if (pos < sink_) return sink_row(seq, head, pos);
  if (pos < q_end_[(size_t)seq]) return main_row(seq, head, pos);
  return ring_row(seq, head, pos);
}

size_t TierStore::stored_row_bytes(int seq, int pos) const {
  if (!tiered_) return main_.row_bytes();
  return pos >= sink_ && pos < q_end_[(size_t)seq] ? main_.row_bytes() : f16_.row_bytes();
}

}  // namespace oscar::kv
