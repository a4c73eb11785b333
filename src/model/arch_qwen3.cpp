// Qwen3 (incl. Qwen3-4B-Thinking-2507, the main OSCAR model): no QKV biases,
// a per-head RMSNorm on Q and K before NeoX-style RoPE, head_dim set
// explicitly (128) rather than n_embd / n_head.
#include "model/architecture.h"

namespace oscar::model {

const Architecture& arch_qwen3() {
  static const Architecture a{"qwen3", RopeStyle::NeoX, /*qk_norm=*/true, /*qkv_bias=*/false};
  return a;
}

}  // namespace oscar::model
