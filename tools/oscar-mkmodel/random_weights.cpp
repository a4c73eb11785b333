#include "random_weights.h"

#include <cmath>

namespace oscar::mkmodel {

float Rng::normal() {
  if (have_spare_) {
    have_spare_ = false;
    return (float)spare_;
  }
  const double u1 = uniform(), u2 = uniform();
  const double r = std::sqrt(-2.0 * std::log(u1));
  spare_ = r * std::sin(2.0 * M_PI * u2);
  have_spare_ = true;
  return (float)(r * std::cos(2.0 * M_PI * u2));
}

uint64_t hash_name(uint64_t seed, const std::string& name, uint64_t index) {
  // FNV-1a over the name, mixed with seed and index.
  uint64_t h = 0xcbf29ce484222325ull ^ seed;
  for (unsigned char c : name) {
    h ^= c;
    h *= 0x100000001b3ull;
  }
  h ^= index + 0x9e3779b97f4a7c15ull + (h << 6) + (h >> 2);
  return h;
}

}  // namespace oscar::mkmodel
