#include "model/model_config.h"

#include <algorithm>

namespace oscar::model {

int ModelConfig::max_head_dim() const {
  int m = 0;
  for (const auto& l : layers) m = std::max(m, l.head_dim);
  return m;
}
int ModelConfig::max_kv_width() const {
  int m = 0;
  for (const auto& l : layers) m = std::max(m, l.n_head_kv * l.head_dim);
  return m;
}
int ModelConfig::max_q_width() const {
  int m = 0;
  for (const auto& l : layers) m = std::max(m, l.n_head * l.head_dim);
  return m;
}

}  // namespace oscar::model
