#include "calib/score_snr.h"

#include <cmath>
#include <limits>

#include "core/error.h"

namespace oscar::calib {

ScoreSnr::ScoreSnr(HeadShape s, std::vector<SnrMode> modes, kv::Q2Params q2, kv::Q2Encoder encode)
    : s_(s), modes_(std::move(modes)), q2_(q2), encode_(encode) {
  const int d = s_.head_dim;
  require(kv::q2_valid(d, q2_), "q2_0 cannot encode rows of head dim " + std::to_string(d));
  for (const SnrMode& m : modes_) {
    require(m.w.empty() || m.w.size() == (size_t)d * d, "SNR mode '" + m.name + "': rotation is not d×d");
    w_.push_back(m.w.empty() ? MatF() : MatF(Eigen::Map<const MatF>(m.w.data(), d, d)));
  }
  gram_.assign((size_t)s_.n_head_kv, std::vector<Eigen::MatrixXf>(modes_.size() + 1, Eigen::MatrixXf::Zero(d, d)));
  sums_.assign((size_t)s_.n_head_kv, std::vector<double>(modes_.size() + 1, 0.0));
}

void ScoreSnr::add(int n, const int32_t* pos, const float* q, const float* k, ThreadPool* pool) {
  if (n <= 0) return;
  if (pos[0] == 0) {
    next_pos_ = 0;
    for (auto& head : gram_)
      for (auto& g : head) g.setZero();
  }
  for (int i = 0; i < n; ++i)
    require(pos[i] == next_pos_ + i, "SNR: batch positions must continue one sequence (expected " +
                                         std::to_string(next_pos_ + i) + ", got " + std::to_string(pos[i]) + ")");
  next_pos_ += n;
  if (pool && pool->size() > 1)
    pool->parallel_for((size_t)s_.n_head_kv, 1, [&](size_t b, size_t e) {
      for (size_t h = b; h < e; ++h) add_head((int)h, n, q, k);
    });
  else
    for (int h = 0; h < s_.n_head_kv; ++h) add_head(h, n, q, k);
  // Pairs (query head, key ≤ query): the batch's keys see the earlier ones
  // and themselves.
  const long long before = (long long)(next_pos_ - n);
  pairs_ += (long long)s_.n_head * (before * n + (long long)n * (n + 1) / 2);
}

void ScoreSnr::add_head(int h, int n, const float* q, const float* k) {
  const int d = s_.head_dim, g = s_.group();
  const int ldq = s_.n_head * d, ldk = s_.n_head_kv * d;
  // Query rows token-major: row t*g + j is query head h*g + j of token t.
  MatF qg(n * g, d), kh(n, d);
  for (int t = 0; t < n; ++t) {
    for (int j = 0; j < g; ++j)
      for (int c = 0; c < d; ++c) qg(t * g + j, c) = q[(size_t)t * ldq + (size_t)(h * g + j) * d + c];
    for (int c = 0; c < d; ++c) kh(t, c) = k[(size_t)t * ldk + (size_t)h * d + c];
  }
  std::vector<uint8_t> code(kv::q2_row_bytes(d, q2_));
  auto accumulate = [&](int slot, const MatF& x) {
    Eigen::MatrixXf& gram = gram_[(size_t)h][(size_t)slot];
    double total = 0;
    // Keys of earlier batches: qᵀ (Σ x·xᵀ) q per query row.
    if (next_pos_ > n) total += (double)((qg * gram).cwiseProduct(qg).sum());
    // Keys of this batch, causally.
    const MatF sc = qg * x.transpose();  // (n*g) × n
    for (int r = 0; r < n * g; ++r) {
      const int t = r / g;
      for (int j = 0; j <= t; ++j) total += (double)sc(r, j) * sc(r, j);
    }
    sums_[(size_t)h][(size_t)slot] += total;
    gram.noalias() += x.transpose() * x;
  };
  accumulate(0, kh);
  for (size_t m = 0; m < modes_.size(); ++m) {
    const MatF& w = w_[m];
    MatF rot = w.size() ? MatF(kh * w.transpose()) : kh;  // rows W·k
    MatF deq(n, d);
    for (int t = 0; t < n; ++t) {
      encode_(&rot(t, 0), code.data(), d, q2_);
      kv::q2_decode(code.data(), &deq(t, 0), d, q2_);
    }
    const MatF err = w.size() ? MatF((rot - deq) * w) : MatF(rot - deq);  // rows Wᵀ·(W·k − k̂')
    accumulate((int)m + 1, err);
  }
}

double ScoreSnr::signal() const {
  double s = 0;
  for (const auto& head : sums_) s += head[0];
  return s;
}

double ScoreSnr::noise(int m) const {
  double s = 0;
  for (const auto& head : sums_) s += head[(size_t)m + 1];
  return s;
}

double ScoreSnr::snr_db(int m) const {
  const double sig = signal(), err = noise(m);
  if (err <= 0) return std::numeric_limits<double>::infinity();
  return 10.0 * std::log10(sig / err);
}

}  // namespace oscar::calib
