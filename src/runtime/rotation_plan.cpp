#include "runtime/rotation_plan.h"

#include "core/error.h"
#include "model/rotation_math.h"

namespace oscar::runtime {

const char* rotation_mode_name(RotationMode m) {
  switch (m) {
    case RotationMode::None: return "none";
    case RotationMode::Calibrated: return "calibrated";
    case RotationMode::Hadamard: return "hadamard";
  }
  return "?";
}

RotationPlan RotationPlan::make(const model::Model& m, bool q2_cache, bool no_hadamard) {
  RotationPlan p;
  const auto& layers = m.weights().layers;
  const size_t n = layers.size();
  p.k.assign(n, nullptr);
  p.v.assign(n, nullptr);
  int with_tensors = 0;
  for (size_t i = 0; i < n; ++i) {
    if (!layers[i].k_rot.empty()) p.k[i] = layers[i].k_rot.data();
    if (!layers[i].v_rot.empty()) p.v[i] = layers[i].v_rot.data();
    if (p.k[i] || p.v[i]) ++with_tensors;
  }
  p.v_back = p.v;
  if (with_tensors > 0) {
    for (size_t i = 0; i < n; ++i) {
      if (!p.v[i]) continue;
      const int d = m.config().layers[i].head_dim;
      std::vector<float>& t = p.transposed_[(int)i];
      t.resize((size_t)d * d);
      for (int r = 0; r < d; ++r)
        for (int c = 0; c < d; ++c) t[(size_t)c * d + r] = p.v[i][(size_t)r * d + c];
      p.v_back[i] = t.data();
    }
    p.mode = RotationMode::Calibrated;
    p.reason = "rotations: calibrated OSCAR rotations from the model file (" + std::to_string(with_tensors) + "/" +
               std::to_string(n) + " layers)";
    return p;
  }
  if (!q2_cache) {
    p.reason = "rotations: none (the model has no rotation tensors and the cache is not q2_0)";
    return p;
  }
  if (no_hadamard) {
    p.reason = "rotations: none (q2_0 cache, no rotation tensors, LLAMA_KV_NO_HADAMARD=1): rows stored unrotated";
    return p;
  }
  for (size_t i = 0; i < n; ++i) {
    const int d = m.config().layers[i].head_dim;
    require(model::is_power_of_two(d), "data-free Hadamard mode needs a power-of-two head dim, layer " +
                                           std::to_string(i) + " has " + std::to_string(d) +
                                           " (set LLAMA_KV_NO_HADAMARD=1 or use a rot-kv model)");
    auto it = p.hadamard_.find(d);
    if (it == p.hadamard_.end()) it = p.hadamard_.emplace(d, model::hadamard_matrix(d)).first;
    p.k[i] = p.v[i] = p.v_back[i] = it->second.data();
  }
  p.mode = RotationMode::Hadamard;
  p.reason = "rotations: data-free Hadamard on K and V (q2_0 cache and the model has no rotation tensors; "
             "accuracy is lower than with calibrated rotations; LLAMA_KV_NO_HADAMARD=1 disables)";
  return p;
}

}  // namespace oscar::runtime
