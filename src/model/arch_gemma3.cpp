// Gemma 3 (1B/4B/12B/27B) as llama.cpp's converter writes it (arch "gemma3").
// Facts this relies on (HF modeling_gemma3, convert_hf_to_gguf.py,
// llama.cpp's gemma3 graph):
//  - the embedding rows are multiplied by sqrt(n_embd);
//  - Gemma's RMSNorm computes x/rms * (1 + w); the converter already adds
//    the 1 to every *norm.weight, so the file holds the plain multiplier;
//  - pre- and post-norms around attention and FFN (post_attention_norm,
//    post_ffw_norm), per-head RMSNorm on Q and K, NeoX RoPE;
//  - GeGLU FFN with the tanh approximation of GELU;
//  - attention scale 1/sqrt(query_pre_attn_scalar): that is the head dim in
//    every published size except 27B (62 layers), where it is
//    n_embd / n_head = 168;
//  - five sliding-window layers then one global layer (the converter writes
//    no pattern: layer i is global when i % 6 == 5), window from
//    attention.sliding_window; local layers use RoPE base 10000 without
//    scaling, global layers rope.freq_base (1e6) with the file's linear
//    scaling (factor 8 in 4B/12B/27B);
//  - final_logit_softcapping only when the file has it (Gemma 3 has none).
#include <cmath>

#include "core/error.h"
#include "model/architecture.h"

namespace oscar::model {

namespace {

void configure_gemma3(const MetadataReader& meta, ModelConfig& c) {
  c.embd_scale = std::sqrt((float)c.n_embd);
  c.final_logit_softcap = (float)meta.opt_float("final_logit_softcapping", 0.0);
  require(c.final_logit_softcap >= 0, meta.where() + "final_logit_softcapping must not be negative");
  const int window = meta.opt_count("attention.sliding_window", 0);
  std::vector<bool> sliding((size_t)c.n_layer, false);
  if (window > 0) {
    auto pattern = meta.per_layer_flags("attention.sliding_window_pattern", c.n_layer);
    if (pattern) sliding = *pattern;
    else
      for (int i = 0; i < c.n_layer; ++i) sliding[(size_t)i] = i % 6 != 5;
  }
  const float local_base = (float)meta.opt_float("rope.freq_base_swa", 10000.0);
  require(local_base > 1, meta.where() + "invalid rope.freq_base_swa");
  for (int i = 0; i < c.n_layer; ++i) {
    LayerConfig& l = c.layers[(size_t)i];
    l.post_norms = true;
    l.ffn_act = FfnActivation::GeluTanh;
    l.attn_scale = c.n_layer == 62 ? 1.0f / std::sqrt((float)(c.n_embd / l.n_head))
                                   : 1.0f / std::sqrt((float)l.head_dim);
    if (sliding[(size_t)i]) {
      l.sliding_window = window;
      l.rope_base = local_base;
      l.rope_freq_scale = 1.0f;
    }
  }
}

}  // namespace

const Architecture& arch_gemma3() {
  static const Architecture a{"gemma3", RopeStyle::NeoX, /*qk_norm=*/true, /*qkv_bias=*/false, configure_gemma3};
  return a;
}

}  // namespace oscar::model
