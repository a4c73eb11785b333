// Rotation tensors oscar-mkmodel can add (--kv-rot), stored as a rot-kv GGUF
// stores them: F32 d x d per layer, holding W with x' = W x (W = M^T for a
// checkpoint's row-vector rotation M).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace oscar::mkmodel {

struct LayerRotations {
  std::vector<std::vector<float>> k, v;  // per layer, row-major d x d
};

// `source`: "random" (random orthogonal from the seed), "hadamard"
// (normalised Walsh-Hadamard), or a directory with k_rotation_qqt_r_h_pbr.pt
// and v_rotation_sst_r_h_pbr.pt. dims: the head dim of each layer. Throws
// Error when the source does not fit those layers.
LayerRotations make_kv_rotations(const std::string& source, const std::vector<int>& dims, uint64_t seed);

}  // namespace oscar::mkmodel
