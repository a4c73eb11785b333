#include "calib/head_stats.h"

#include <algorithm>
#include <string>

#include "core/error.h"

namespace oscar::calib {

namespace {

// Rows [r0, r0+nr) of a row-major float block with row stride `ld`, columns
// [c0, c0+d), as a double matrix (nr × d).
Eigen::MatrixXd block_rows(const float* x, int nr, int ld, int c0, int d) {
  Eigen::MatrixXd m(nr, d);
  for (int r = 0; r < nr; ++r)
    for (int c = 0; c < d; ++c) m(r, c) = x[(size_t)r * ld + c0 + c];
  return m;
}

// Runs fn(h) for every KV head, on the pool when there is one.
template <class Fn>
void for_heads(int n_head_kv, ThreadPool* pool, Fn&& fn) {
  if (pool && pool->size() > 1 && n_head_kv > 1)
    pool->parallel_for((size_t)n_head_kv, 1, [&](size_t b, size_t e) {
      for (size_t h = b; h < e; ++h) fn((int)h);
    });
  else
    for (int h = 0; h < n_head_kv; ++h) fn(h);
}

}  // namespace

void check_shape(const HeadShape& s, int layer) {
  const std::string where = "layer " + std::to_string(layer) + ": ";
  require(s.n_head > 0 && s.n_head_kv > 0 && s.head_dim > 0, where + "no attention heads to calibrate");
  require(s.n_head % s.n_head_kv == 0, where + std::to_string(s.n_head) + " query heads do not split into " +
                                           std::to_string(s.n_head_kv) + " KV groups");
}

QueryStats::QueryStats(HeadShape s) : s_(s), sum_((size_t)s.n_head_kv, Eigen::MatrixXd::Zero(s.head_dim, s.head_dim)) {}

void QueryStats::add(int n, const float* q, ThreadPool* pool) {
  for_heads(s_.n_head_kv, pool, [&](int h) { add_head(h, n, q); });
  tokens_ += n;
}

void QueryStats::add_head(int h, int n, const float* q) {
  const int d = s_.head_dim, g = s_.group(), ld = s_.n_head * d;
  // All rows of the group's heads stacked: (n*g) × d, then one rank-k update.
  Eigen::MatrixXd x(n * g, d);
  for (int j = 0; j < g; ++j) x.middleRows(j * n, n) = block_rows(q, n, ld, (h * g + j) * d, d);
  sum_[(size_t)h].selfadjointView<Eigen::Lower>().rankUpdate(x.transpose());
}

Eigen::MatrixXd QueryStats::head_cov(int h) const {
  Eigen::MatrixXd c = sum_[(size_t)h].selfadjointView<Eigen::Lower>();
  const double count = (double)tokens_ * s_.group();
  return count > 0 ? Eigen::MatrixXd(c / count) : c;
}

Eigen::MatrixXd QueryStats::c_k() const {
  Eigen::MatrixXd c = Eigen::MatrixXd::Zero(s_.head_dim, s_.head_dim);
  for (int h = 0; h < s_.n_head_kv; ++h) c += head_cov(h);
  c /= s_.n_head_kv;
  return (c + c.transpose()) / 2;
}

ValueStats::ValueStats(const QueryStats& q)
    : s_(q.shape()),
      sum_((size_t)s_.n_head_kv, Eigen::MatrixXd::Zero(s_.head_dim, s_.head_dim)),
      wsum_((size_t)s_.n_head_kv, 0.0) {
  for (int h = 0; h < s_.n_head_kv; ++h) c_h_.push_back(q.head_cov(h));
}

void ValueStats::add(int n, const float* k, const float* v, ThreadPool* pool) {
  for_heads(s_.n_head_kv, pool, [&](int h) { add_head(h, n, k, v); });
  tokens_ += n;
}

void ValueStats::add_head(int h, int n, const float* k, const float* v) {
  const int d = s_.head_dim, ld = s_.n_head_kv * d;
  const Eigen::MatrixXd kh = block_rows(k, n, ld, h * d, d);
  Eigen::MatrixXd vh = block_rows(v, n, ld, h * d, d);
  // w_t = k_tᵀ C_h k_t ≥ 0 (C_h is a Gram matrix); scale rows by √w_t.
  const Eigen::VectorXd w = (kh * c_h_[(size_t)h]).cwiseProduct(kh).rowwise().sum().cwiseMax(0.0);
  wsum_[(size_t)h] += w.sum();
  vh = w.cwiseSqrt().asDiagonal() * vh;
  sum_[(size_t)h].selfadjointView<Eigen::Lower>().rankUpdate(vh.transpose());
}

Eigen::MatrixXd ValueStats::c_v() const {
  Eigen::MatrixXd c = Eigen::MatrixXd::Zero(s_.head_dim, s_.head_dim);
  for (int h = 0; h < s_.n_head_kv; ++h) {
    Eigen::MatrixXd ch = sum_[(size_t)h].selfadjointView<Eigen::Lower>();
    // A head whose weights are all zero (all-zero keys) contributes nothing
    // rather than dividing by zero.
    c += ch / std::max(wsum_[(size_t)h], 1e-12);
  }
  c /= s_.n_head_kv;
  return (c + c.transpose()) / 2;
}

}  // namespace oscar::calib
