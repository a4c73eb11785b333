// What the KV cache tests build their caches from: the host's kernel table
// and a two-layer model shape.
#pragma once

#include "core/cpu_features.h"
#include "model/model_config.h"
#include "quant/quant.h"

namespace oscar::kv::testing {

inline const quant::QuantTable& table() {
  static const quant::QuantTable t(detect_cpu());
  return t;
}

// Two layers of n_kv heads of dimension d (no GQA); layer 1 is a sliding
// window of `layer1_window` positions when that is not 0.
inline model::ModelConfig two_layers(int d, int n_kv, int layer1_window = 0) {
  model::ModelConfig m;
  m.arch = "test";
  m.n_layer = 2;
  for (int l = 0; l < 2; ++l) {
    model::LayerConfig lc;
    lc.n_head = n_kv;
    lc.n_head_kv = n_kv;
    lc.head_dim = d;
    lc.rope_dim = d;
    lc.sliding_window = l == 1 ? layer1_window : 0;
    m.layers.push_back(lc);
  }
  return m;
}

}  // namespace oscar::kv::testing
