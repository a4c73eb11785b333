// Llama (and Llama-2/3, Mistral-style dense models): RMSNorm, GQA, SwiGLU,
// "normal" RoPE over adjacent pairs (the converter permutes Q/K rows so that
// GGUF llama uses this layout).
#include "model/architecture.h"

namespace oscar::model {

const Architecture& arch_llama() {
  static const Architecture a{"llama", RopeStyle::Normal, /*qk_norm=*/false, /*qkv_bias=*/false};
  return a;
}

}  // namespace oscar::model
