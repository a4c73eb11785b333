#include "server/embeddings_pooling.h"

#include <cmath>
#include <cstring>
#include <stdexcept>

namespace oscar::server {

std::optional<Pooling> pooling_from_name(const std::string& name) {
  if (name == "none") return Pooling::None;
  if (name == "mean") return Pooling::Mean;
  if (name == "cls") return Pooling::Cls;
  if (name == "last") return Pooling::Last;
  if (name == "rank") return Pooling::Rank;
  return std::nullopt;
}

const char* pooling_name(Pooling p) {
  switch (p) {
    case Pooling::None: return "none";
    case Pooling::Mean: return "mean";
    case Pooling::Cls: return "cls";
    case Pooling::Last: return "last";
    case Pooling::Rank: return "rank";
  }
  return "?";
}

std::vector<float> pool_rows(const float* rows, int n_tokens, int n_embd, Pooling p) {
  if (n_tokens <= 0) throw std::invalid_argument("pool_rows: no tokens");
  const size_t E = (size_t)n_embd;
  switch (p) {
    case Pooling::Cls: return std::vector<float>(rows, rows + E);
    case Pooling::Last: return std::vector<float>(rows + (size_t)(n_tokens - 1) * E, rows + (size_t)n_tokens * E);
    case Pooling::Mean: {
      // Summed in double: a long input's rounding would otherwise depend on its length.
      std::vector<double> sum(E, 0.0);
      for (int t = 0; t < n_tokens; ++t)
        for (size_t j = 0; j < E; ++j) sum[j] += rows[(size_t)t * E + j];
      std::vector<float> out(E);
      for (size_t j = 0; j < E; ++j) out[j] = (float)(sum[j] / n_tokens);
      return out;
    }
    default: throw std::invalid_argument(std::string("pool_rows: pooling '") + pooling_name(p) + "' pools no rows");
  }
}

void normalize_embedding(std::vector<float>& v, int mode) {
  if (mode < 0) return;
  double norm = 0;
  if (mode == 0) {
    for (float x : v) norm = std::max(norm, (double)std::fabs(x));
    norm /= 32760.0;  // the largest value maps to the int16 range
  } else if (mode == 1) {
    for (float x : v) norm += std::fabs(x);
  } else if (mode == 2) {
    for (float x : v) norm += (double)x * x;
    norm = std::sqrt(norm);
  } else {
    for (float x : v) norm += std::pow(std::fabs((double)x), mode);
    norm = std::pow(norm, 1.0 / mode);
  }
  if (norm <= 0) return;
  for (float& x : v) x = (float)(x / norm);
}

std::string embedding_base64(const std::vector<float>& v) {
  static constexpr char kAlphabet[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
  std::vector<unsigned char> bytes(v.size() * 4);
  for (size_t i = 0; i < v.size(); ++i) {
    uint32_t u;
    std::memcpy(&u, &v[i], 4);
    for (int b = 0; b < 4; ++b) bytes[i * 4 + b] = (unsigned char)(u >> (8 * b));  // little-endian
  }
  std::string out;
  out.reserve((bytes.size() + 2) / 3 * 4);
  for (size_t i = 0; i < bytes.size(); i += 3) {
    const uint32_t n = (uint32_t)bytes[i] << 16 | (i + 1 < bytes.size() ? (uint32_t)bytes[i + 1] << 8 : 0) |
                       (i + 2 < bytes.size() ? (uint32_t)bytes[i + 2] : 0);
    out += kAlphabet[(n >> 18) & 63];
    out += kAlphabet[(n >> 12) & 63];
    out += i + 1 < bytes.size() ? kAlphabet[(n >> 6) & 63] : '=';
    out += i + 2 < bytes.size() ? kAlphabet[n & 63] : '=';
  }
  return out;
}

}  // namespace oscar::server
