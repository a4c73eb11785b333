// The per-layer statistics OSCAR calibration accumulates (docs/OSCAR.md
// §5, "Calibration"), streaming and in double precision. With GQA groups g(h) =
// the query heads that share KV head h:
//   pass 1 (QueryStats):  C_h = Σ_{tokens, heads in g(h)} q·qᵀ / count,
//                         C_K = mean over h of C_h
//   pass 2 (ValueStats):  w_t = k_tᵀ C_h k_t with the final C_h, so it needs
//                         pass 1 to be complete;
//                         C_V = mean over h of Σ_t w_t v_t·v_tᵀ / Σ_t w_t
//                         (the same as normalising the weights of a head to
//                         sum to the token count and dividing by it).
// Rows are what runtime::LayerObserver delivers: (n, n_head*hd) for q,
// (n, n_head_kv*hd) for k and v, query head j belonging to KV head
// j / (n_head / n_head_kv).
#pragma once

#include <Eigen/Dense>
#include <vector>

#include "core/thread_pool.h"
#include "model/model_config.h"

namespace oscar::calib {

struct HeadShape {
  int n_head = 0;
  int n_head_kv = 0;
  int head_dim = 0;
  static HeadShape of(const model::LayerConfig& l) { return {l.n_head, l.n_head_kv, l.head_dim}; }
  int group() const { return n_head / n_head_kv; }
};

// Checks a layer's shape can be calibrated (positive, GQA-divisible);
// throws oscar::Error naming the layer otherwise.
void check_shape(const HeadShape& s, int layer);

class QueryStats {
 public:
  explicit QueryStats(HeadShape s);
  // KV heads are spread over `pool` when given.
  void add(int n, const float* q, ThreadPool* pool = nullptr);
  long long tokens() const { return tokens_; }
  // C_h (symmetric, d×d); zero before any token.
  Eigen::MatrixXd head_cov(int h) const;
  // C_K, symmetrised as (C + Cᵀ)/2.
  Eigen::MatrixXd c_k() const;
  const HeadShape& shape() const { return s_; }

 private:
  void add_head(int h, int n, const float* q);
  HeadShape s_;
  std::vector<Eigen::MatrixXd> sum_;  // per KV head: Σ q·qᵀ
  long long tokens_ = 0;
};

class ValueStats {
 public:
  // Takes the final query covariances of `q` (pass 1 must be complete).
  explicit ValueStats(const QueryStats& q);
  void add(int n, const float* k, const float* v, ThreadPool* pool = nullptr);
  long long tokens() const { return tokens_; }
  Eigen::MatrixXd c_v() const;

 private:
  void add_head(int h, int n, const float* k, const float* v);
  HeadShape s_;
  std::vector<Eigen::MatrixXd> c_h_;   // per KV head: C_h from pass 1
  std::vector<Eigen::MatrixXd> sum_;   // per KV head: Σ w·v·vᵀ
  std::vector<double> wsum_;           // per KV head: Σ w
  long long tokens_ = 0;
};

}  // namespace oscar::calib
