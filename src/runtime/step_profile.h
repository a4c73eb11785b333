// Where the wall time of forward passes goes, piece by piece: what
// `oscar-bench --profile` prints. Forward adds to one when
// ForwardOptions::profile is set (one clock read per piece boundary, six a
// layer); without it nothing is measured.
#pragma once

#include <array>
#include <chrono>
#include <cstdint>

#include "model/model.h"

namespace oscar::runtime {

struct StepProfile {
  // In the order a layer runs them; kOther is everything between (embedding
  // rows, Gemma 4's per-layer embeddings and output scale, the commit).
  enum Piece {
    kAttnIn,    // norm, Q/K/V projections, per-head norms and RoPE, rotations
    kAttention, // attention over the cache and the batch, V rotation undone, K/V stored
    kAttnOut,   // output projection, post-norm, residual add
    kFfnIn,     // norm, gate/up projections, gated activation
    kFfnDown,   // down projection, post-norm, residual add
    kLogits,    // final norm, output matrix, soft-capping
    kOther,
    kCount
  };
  static const char* name(Piece p);

  std::array<double, kCount> seconds{};
  int64_t evals = 0;

  double total_seconds() const;
  void clear() { *this = StepProfile{}; }
};

// The weight bytes each piece reads once per eval (every layer's matrices
// and the output matrix; none for kAttention and kOther, whose bytes depend
// on the cache): what a decode step's time per piece is compared against.
std::array<double, StepProfile::kCount> piece_weight_bytes(const model::Model& m);

// Charges the time since the previous mark to a piece. Belongs to one
// Forward; inactive (no clock reads) without a profile.
class ProfileClock {
 public:
  explicit ProfileClock(StepProfile* p) : p_(p) {}
  void start() {
    if (p_) last_ = std::chrono::steady_clock::now();
  }
  void mark(StepProfile::Piece piece) {
    if (!p_) return;
    const auto now = std::chrono::steady_clock::now();
    p_->seconds[piece] += std::chrono::duration<double>(now - last_).count();
    last_ = now;
  }
  void end_eval() {
    if (p_) ++p_->evals;
  }

 private:
  StepProfile* p_;
  std::chrono::steady_clock::time_point last_{};
};

}  // namespace oscar::runtime
