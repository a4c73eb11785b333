// API-key checks. The comparison takes the same time wherever the first
// difference is, so response timing does not leak how much of a guessed key
// was right.
#pragma once

#include <string>
#include <string_view>
#include <vector>

namespace oscar::server {

bool constant_time_equal(std::string_view a, std::string_view b);

// The key a request presents: "Authorization: Bearer KEY" or "X-Api-Key: KEY"
// (empty when neither is there).
std::string presented_key(const std::string& authorization, const std::string& x_api_key);

// True when no keys are configured, or `key` equals one of them (every key
// is compared, so the time does not depend on which one matched).
bool key_accepted(const std::vector<std::string>& keys, std::string_view key);

}  // namespace oscar::server
