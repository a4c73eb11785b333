#include "model/model_config.h"

#include <algorithm>
#include <cmath>

namespace oscar::model {

float LayerConfig::kq_scale() const { return attn_scale > 0 ? attn_scale : 1.0f / std::sqrt((float)head_dim); }

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
int ModelConfig::max_ff() const {
  int m = n_ff;
  for (const auto& l : layers) m = std::max(m, l.n_ff);
  return m;
}

int ModelConfig::max_window() const {
  int m = 0;
  for (const auto& l : layers) m = std::max(m, l.sliding_window);
  return m;
}

}  // namespace oscar::model
