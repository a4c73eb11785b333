#include "kv_rotations.h"

#include <cmath>
#include <filesystem>

#include "core/error.h"
#include "model/rotation_math.h"
#include "random_weights.h"
#include "torchio/rotation_set.h"

namespace oscar::mkmodel {

namespace {

// Gram-Schmidt (twice, for accuracy) on a Gaussian matrix: a random
// orthogonal matrix, deterministic in the seed.
std::vector<float> random_orthogonal(int d, uint64_t seed) {
  std::vector<double> a((size_t)d * d);
  Rng rng(seed);
  for (auto& x : a) x = rng.normal();
  for (int i = 0; i < d; ++i)
    for (int pass = 0; pass < 2; ++pass) {
      double* r = &a[(size_t)i * d];
      for (int j = 0; j < i; ++j) {
        const double* q = &a[(size_t)j * d];
        double dot = 0;
        for (int k = 0; k < d; ++k) dot += r[k] * q[k];
        for (int k = 0; k < d; ++k) r[k] -= dot * q[k];
      }
      double n = 0;
      for (int k = 0; k < d; ++k) n += r[k] * r[k];
      n = std::sqrt(n);
      for (int k = 0; k < d; ++k) r[k] /= n;
    }
  return {a.begin(), a.end()};
}

std::vector<std::vector<float>> from_checkpoint(const std::string& path, const std::vector<int>& dims) {
  const torchio::RotationSet rs = torchio::load_rotation_set(path);
  const int n_layer = (int)dims.size();
  std::vector<std::vector<float>> out((size_t)n_layer);
  for (int i = 0; i < n_layer; ++i) {
    const int d = dims[(size_t)i];
    require(rs.dim == d, "--kv-rot: " + path + " has head dim " + std::to_string(rs.dim) + ", layer " +
                             std::to_string(i) + " of the model " + std::to_string(d));
    auto it = rs.rotation.find(i);
    require(it != rs.rotation.end(), "--kv-rot: " + path + " has no rotation for layer " + std::to_string(i));
    out[(size_t)i] = torchio::transpose(it->second, d);
  }
  return out;
}

}  // namespace

LayerRotations make_kv_rotations(const std::string& source, const std::vector<int>& dims, uint64_t seed) {
  LayerRotations r;
  const int n_layer = (int)dims.size();
  if (source == "random") {
    for (int i = 0; i < n_layer; ++i) {
      r.k.push_back(random_orthogonal(dims[(size_t)i], hash_name(seed, "k_rot", (uint64_t)i)));
      r.v.push_back(random_orthogonal(dims[(size_t)i], hash_name(seed, "v_rot", (uint64_t)i)));
    }
  } else if (source == "hadamard") {
    for (int i = 0; i < n_layer; ++i) {
      const int d = dims[(size_t)i];
      require(model::is_power_of_two(d), "--kv-rot hadamard needs power-of-two head dims");
      r.k.push_back(model::hadamard_matrix(d));
      r.v.push_back(r.k.back());
    }
  } else {
    const std::filesystem::path dir(source);
    require(std::filesystem::is_directory(dir),
            "--kv-rot: '" + source + "' is neither random, hadamard nor a directory of rotation checkpoints");
    r.k = from_checkpoint((dir / "k_rotation_qqt_r_h_pbr.pt").string(), dims);
    r.v = from_checkpoint((dir / "v_rotation_sst_r_h_pbr.pt").string(), dims);
  }
  return r;
}

}  // namespace oscar::mkmodel
