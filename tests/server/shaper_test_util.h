// Test helper: a ShaperInfo with its first fields set and the rest
// defaulted (partial aggregate initialisation draws -Wextra warnings).
#pragma once

#include <ctime>
#include <string>
#include <utility>

#include "server/response_shaper.h"

namespace oscar::server {

inline ShaperInfo basic_info(std::string id, std::string model, std::time_t created, bool include_usage,
                             bool logprobs, int n_probs) {
  ShaperInfo i;
  i.id = std::move(id);
  i.model = std::move(model);
  i.created = created;
  i.include_usage = include_usage;
  i.logprobs = logprobs;
  i.n_probs = n_probs;
  return i;
}

}  // namespace oscar::server
