// Which rotation each layer applies to Q/K and to V, decided once from the
// model and the cache settings (docs/OSCAR.md §1, "Which rotation a run uses"):
//   - the model has rotation tensors: use them (they already contain the
//     Hadamard; never apply it again);
//   - else a q2_0 cache: the normalised Hadamard as both rotations (data-free
//     mode), unless no_hadamard, which stores unrotated rows;
//   - else: no rotation.
#pragma once

#include <map>
#include <string>
#include <vector>

#include "model/model.h"

namespace oscar::runtime {

enum class RotationMode { None, Calibrated, Hadamard };

struct RotationPlan {
  RotationMode mode = RotationMode::None;
  std::vector<const float*> k, v;  // per layer; nullptr: no rotation
  // Per layer, W_v^T (undoes v on the attention output); the Hadamard is its
  // own transpose, so there v_back == v.
  std::vector<const float*> v_back;
  std::string reason;              // one line for the log

  static RotationPlan make(const model::Model& m, bool q2_cache, bool no_hadamard);
  RotationPlan() = default;
  RotationPlan(RotationPlan&&) = default;  // map nodes, and so the pointers, survive a move
  RotationPlan& operator=(RotationPlan&&) = default;
  RotationPlan(const RotationPlan&) = delete;
  RotationPlan& operator=(const RotationPlan&) = delete;

 private:
  std::map<int, std::vector<float>> hadamard_;    // by head dim (pointers above point here)
  std::map<int, std::vector<float>> transposed_;  // by layer: W_v^T of calibrated rotations
};

const char* rotation_mode_name(RotationMode m);

}  // namespace oscar::runtime
