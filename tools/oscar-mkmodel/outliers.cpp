#include "outliers.h"

#include <algorithm>
#include <cmath>
#include <cstdlib>

#include "core/error.h"
#include "random_weights.h"

namespace oscar::mkmodel {

namespace {

float parse_positive(const std::string& what, const std::string& v) {
  char* end = nullptr;
  const float x = std::strtof(v.c_str(), &end);
  if (v.empty() || *end || !(x > 0) || !std::isfinite(x))
    throw Error("--k-outliers: " + what + " must be a positive number, got '" + v + "'");
  return x;
}

// "blk.12.attn_k.weight" -> 12, "attn_k.weight"; -1 for tensors outside a block.
int layer_of(const std::string& name, std::string& rest) {
  if (name.rfind("blk.", 0) != 0) return -1;
  const size_t dot = name.find('.', 4);
  if (dot == std::string::npos) return -1;
  rest = name.substr(dot + 1);
  return std::atoi(name.c_str() + 4);
}

// Channel 0 after the attention RMSNorm of the first layer: kMassive over the
// RMS of an embedding row (the other channels are unit normals).
float normed_massive(const ModelSpec& s) {
  const float e = (float)s.n_embd;
  return kMassive / std::sqrt((kMassive * kMassive + e - 1) / e);
}

// The factor that takes a planted channel (mean kOffset, noise 1) to SCALE
// times the RMS of a unit-noise channel.
float size_factor(float scale) { return scale / std::sqrt(kOffset * kOffset + 1); }

bool has_qk_norm(const ModelSpec& s) { return s.arch == "qwen3"; }

}  // namespace

void parse_k_outliers(const std::string& value, ModelSpec& s) {
  std::vector<std::string> parts{""};
  for (char c : value) {
    if (c == ',') parts.emplace_back();
    else parts.back() += c;
  }
  if (parts.size() > 3) throw Error("--k-outliers: expected N[,SCALE[,QSCALE]], got '" + value + "'");
  char* end = nullptr;
  const long n = std::strtol(parts[0].c_str(), &end, 10);
  if (parts[0].empty() || *end || n < 0 || n > 4096)
    throw Error("--k-outliers: N must be a channel count, got '" + parts[0] + "'");
  s.k_outliers = (int)n;
  if (parts.size() > 1) s.k_outlier_scale = parse_positive("SCALE", parts[1]);
  s.q_outlier_scale = parts.size() > 2 ? parse_positive("QSCALE", parts[2]) : s.k_outlier_scale / 4;
}

std::vector<int> outlier_channels(const ModelSpec& s, int layer, int d) {
  // The candidates: both members of the d/8 lowest-frequency RoPE pairs.
  std::vector<int> cand;
  const bool neox = s.arch != "llama";
  for (int pair = d / 2 - 1; pair >= d / 2 - std::max(1, d / 8); --pair)
    for (int m = 0; m < 2; ++m) cand.push_back(neox ? pair + m * (d / 2) : 2 * pair + m);
  // The first N of a seeded shuffle: arbitrary indices, as in trained models
  // (a regular set such as adjacent channels can sum to a flat Hadamard row
  // by accident, which real models do not arrange).
  Rng rng(hash_name(s.seed, "k_outliers.channels", (uint64_t)layer));
  for (size_t i = cand.size(); i > 1; --i) std::swap(cand[i - 1], cand[(size_t)(rng.next() % i)]);
  cand.resize(std::min(cand.size(), (size_t)s.k_outliers));
  return cand;
}

float outlier_sign(const ModelSpec& s, int layer, int j) {
  Rng rng(hash_name(s.seed, "k_outliers.sign", (uint64_t)layer * 4096 + (uint64_t)j));
  return (rng.next() >> 63) ? -1.0f : 1.0f;
}

void plant_outliers(const ModelSpec& s, const std::string& name, uint64_t row, std::span<float> v) {
  if (s.k_outliers == 0) return;
  if (name == "token_embd.weight") {
    v[0] = kMassive;
    return;
  }
  std::string rest;
  const int layer = layer_of(name, rest);
  const bool norm = rest == "attn_k_norm.weight" || rest == "attn_q_norm.weight";
  if (layer < 0 || (!norm && rest != "attn_k.weight" && rest != "attn_q.weight")) return;
  const int d = s.head_dim;
  const std::vector<int> ch = outlier_channels(s, layer, d);
  const bool is_k = rest == "attn_k.weight" || rest == "attn_k_norm.weight";
  const float f = size_factor(is_k ? s.k_outlier_scale : s.q_outlier_scale);
  if (norm) {
    for (size_t j = 0; j < ch.size(); ++j) v[(size_t)ch[j]] = f;
    return;
  }
  const int c = (int)(row % (uint64_t)d);
  for (size_t j = 0; j < ch.size(); ++j) {
    if (ch[j] != c) continue;
    v[0] += outlier_sign(s, layer, (int)j) * kOffset / normed_massive(s);
    // Without a head norm the projection row itself carries the size.
    if (!has_qk_norm(s))
      for (auto& x : v) x *= f;
  }
}

}  // namespace oscar::mkmodel
