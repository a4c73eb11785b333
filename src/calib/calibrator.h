// OSCAR calibration of a loaded model on token sequences, on the CPU:
//   pass 1  forward over the calibration sequences, accumulating the
//           GQA-grouped query covariance of every layer (head_stats.h);
//   pass 2  the same sequences again, accumulating the score-weighted value
//           covariance, whose weights need pass 1's final covariance (two
//           streaming passes instead of storing activations);
//   eigen   per layer C_K and C_V → R·H·P (rotation_builder.h);
//   SNR     forward over held-out sequences, INT2 attention-score SNR per
//           layer with no rotation, the Hadamard, and the calibrated rotation.
// Forward passes run with an f16 cache; the observer sees post-RoPE,
// pre-rotation rows, so rotations already in the model change nothing.
// Head shapes come from each layer's config (layers may differ).
#pragma once

#include <functional>
#include <string>
#include <vector>

#include "calib/rotation_builder.h"
#include "core/thread_pool.h"
#include "kv/q2_codec.h"
#include "model/model.h"

namespace oscar::calib {

struct CalibrationConfig {
  int n_ubatch = 512;      // tokens per forward call in passes 1 and 2
  int snr_ubatch = 128;    // tokens per forward call in the SNR pass (bounds its batch² term)
  kv::Q2Params snr_q2{0.96f, 0};  // K codec for the SNR report: OSCAR's default K clip
};

struct LayerSnr {
  double none = 0, hadamard = 0, calibrated = 0;  // dB
};

struct CalibrationResult {
  std::vector<LayerRotation> k, v;  // per layer
  std::vector<LayerSnr> snr;        // per layer; empty without held-out text
  long long calib_tokens = 0, heldout_tokens = 0;
  // Seconds: forward passes (observer time excluded), statistics
  // accumulation inside the observer, eigendecompositions + compositions
  // (the d³ work), and the SNR pass split the same way.
  double t_forward = 0, t_stats = 0, t_eigen = 0, t_snr_forward = 0, t_snr_stats = 0;
};

// One line of progress (pass, sequence, tokens/s); may be empty.
using Progress = std::function<void(const std::string&)>;

// Runs everything above. Sequences are evaluated one at a time from position
// 0, each as it is given (the caller adds BOS and chooses their length).
// Throws oscar::Error for an empty calibration set, a layer that cannot be
// calibrated (head dim not a power of two, GQA mismatch) or non-finite
// statistics.
CalibrationResult calibrate(const model::Model& model, ThreadPool& pool,
                            const std::vector<std::vector<int32_t>>& calib,
                            const std::vector<std::vector<int32_t>>& heldout, const CalibrationConfig& cfg,
                            const Progress& progress = nullptr);

}  // namespace oscar::calib
