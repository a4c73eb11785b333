// Qwen2 / Qwen2.5: llama-like with biases on the Q, K, V projections and
// NeoX-style RoPE (rotating the two halves of each head).
#include "model/architecture.h"

namespace oscar::model {

const Architecture& arch_qwen2() {
  static const Architecture a{"qwen2", RopeStyle::NeoX, /*qk_norm=*/false, /*qkv_bias=*/true};
  return a;
}

}  // namespace oscar::model
