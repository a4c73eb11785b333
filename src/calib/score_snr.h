// INT2 attention-score SNR of one layer, measured causally over held-out
// text: for every query head i and every key j of its GQA group at a
// position ≤ the query's, signal = Σ (q·k)², noise = Σ (q·k − q·k̃)², where
// k̃ = Wᵀ·decode(encode(W·k)) is the key after the rotation W, the q2_0
// codec (kv/q2_codec.h) and the rotation undone (q·k̃ equals the rotated
// query against the stored key, since W is orthogonal).
// SNR = 10·log10(signal / noise) dB, one figure per rotation mode.
//
// The sums over key positions are kept as running Gram matrices (Σ k·kᵀ and
// Σ e·eᵀ with e = k − k̃), so a sequence of any length costs O(n·d²) per
// head plus O(batch²·d) inside each batch; nothing is stored per token.
#pragma once

#include <Eigen/Dense>
#include <string>
#include <vector>

#include "calib/head_stats.h"
#include "core/thread_pool.h"
#include "kv/q2_codec.h"

namespace oscar::calib {

struct SnrMode {
  std::string name;      // e.g. "none", "hadamard", "calibrated"
  std::vector<float> w;  // W, row-major d*d (x' = W·x); empty: no rotation
};

class ScoreSnr {
 public:
  // encode: the q2_0 encoder (bytes identical on every CPU; the SIMD one
  // only saves time).
  ScoreSnr(HeadShape s, std::vector<SnrMode> modes, kv::Q2Params q2, kv::Q2Encoder encode = kv::Q2Encoder{});
  // The rows of one batch of a single sequence, positions consecutive; a
  // batch starting at position 0 starts a new sequence. Heads are spread
  // over `pool` when given.
  void add(int n, const int32_t* pos, const float* q, const float* k, ThreadPool* pool = nullptr);

  int n_modes() const { return (int)modes_.size(); }
  const std::string& mode_name(int m) const { return modes_[(size_t)m].name; }
  double signal() const;
  double noise(int m) const;
  double snr_db(int m) const;
  long long pairs() const { return pairs_; }  // (query head, key) pairs summed

 private:
  using MatF = Eigen::Matrix<float, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>;
  void add_head(int h, int n, const float* q, const float* k);

  HeadShape s_;
  std::vector<SnrMode> modes_;
  std::vector<MatF> w_;  // per mode; empty when no rotation
  kv::Q2Params q2_;
  kv::Q2Encoder encode_;
  // Per KV head: running Gram matrices [0] = Σ k·kᵀ, [1 + m] = Σ e_m·e_mᵀ,
  // and the sums they produced so far.
  std::vector<std::vector<Eigen::MatrixXf>> gram_;
  std::vector<std::vector<double>> sums_;
  int next_pos_ = 0;
  long long pairs_ = 0;
};

}  // namespace oscar::calib
