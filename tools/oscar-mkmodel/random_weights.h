// Deterministic random weights: every value depends only on the seed, the
// tensor name and its index, so output is identical for any thread count.
#pragma once

#include <cstdint>
#include <string>

namespace oscar::mkmodel {

// splitmix64-based stream with a Box-Muller normal.
class Rng {
 public:
  explicit Rng(uint64_t seed) : s_(seed) {}
  uint64_t next() {
    uint64_t z = (s_ += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
  }
  double uniform() { return ((next() >> 11) + 0.5) * (1.0 / 9007199254740992.0); }
  float normal();

 private:
  uint64_t s_;
  bool have_spare_ = false;
  double spare_ = 0;
};

uint64_t hash_name(uint64_t seed, const std::string& name, uint64_t index);

// How a tensor's values are drawn: normal(mean, std).
struct Init {
  float mean = 0.0f;
  float std = 1.0f;
};

}  // namespace oscar::mkmodel
