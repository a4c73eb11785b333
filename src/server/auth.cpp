#include "server/auth.h"

#include <cstdint>

namespace oscar::server {

bool constant_time_equal(std::string_view a, std::string_view b) {
  // Walk the presented string in full whatever the lengths; a length
  // mismatch only shows through the final result.
  volatile uint8_t diff = a.size() == b.size() ? 0 : 1;
  const size_t n = a.size();
  for (size_t i = 0; i < n; ++i) {
    const uint8_t x = (uint8_t)a[i];
    const uint8_t y = b.empty() ? 0 : (uint8_t)b[i % b.size()];
    diff = diff | (uint8_t)(x ^ y);
  }
  return diff == 0;
}

std::string presented_key(const std::string& authorization, const std::string& x_api_key) {
  static constexpr std::string_view kBearer = "Bearer ";
  if (authorization.size() > kBearer.size() && authorization.compare(0, kBearer.size(), kBearer) == 0)
    return authorization.substr(kBearer.size());
  return x_api_key;
}

bool key_accepted(const std::vector<std::string>& keys, std::string_view key) {
  if (keys.empty()) return true;
  bool ok = false;
  for (const auto& k : keys) ok = constant_time_equal(key, k) || ok;
  return ok;
}

}  // namespace oscar::server
