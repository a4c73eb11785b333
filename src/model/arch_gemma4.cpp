// Gemma 4 dense models (E2B, E4B, 12B, 31B) as llama.cpp's converter writes
// them (arch "gemma4"). Facts this relies on (HF modeling_gemma4 /
// configuration_gemma4, convert_hf_to_gguf.py, llama.cpp's gemma4 graph):
//  - what Gemma 3 has (sqrt(n_embd) embedding scale, pre/post norms, Q/K
//    norms, GeGLU with tanh GELU, NeoX RoPE), but the RMSNorm weight is used
//    as is (no 1 + w, and the converter adds nothing), the attention scale is
//    1 (Q and K are RMS-normed), and V gets an RMSNorm without weight;
//  - attention.sliding_window_pattern: one boolean per layer, true = sliding;
//  - global layers: key_length / rope.dimension_count / rope.freq_base;
//    sliding layers: key_length_swa / rope.dimension_count_swa /
//    rope.freq_base_swa; head_count_kv may be per layer;
//  - global layers use "proportional" RoPE: rope_freqs.weight holds one
//    factor per rotated pair (1 for the first partial_rotary_factor of the
//    pairs, 1e30 = unrotated for the rest);
//  - a layer without attn_v.weight (attention_k_eq_v) takes V from the raw
//    K projection (before the K norm and RoPE);
//  - the last attention.shared_kv_layers layers have no K/V of their own:
//    each reads the KV of the last earlier layer of its own kind (sliding
//    or global) before the shared block;
//  - blk.N.layer_output_scale multiplies the whole layer output, residual
//    included; per-layer embeddings (embedding_length_per_layer_input > 0)
//    add a gated term after the FFN (see forward_ple.cpp);
//  - final_logit_softcapping (30 in the published models).
// Mixture-of-experts variants (26B-A4B: expert_count > 0) are refused.
#include <cmath>

#include "core/error.h"
#include "model/architecture.h"

namespace oscar::model {

namespace {

void configure_gemma4(const MetadataReader& meta, ModelConfig& c) {
  require(meta.opt_count("expert_count", 0) == 0,
          meta.where() + "Gemma 4 mixture-of-experts models (e.g. 26B-A4B) are not supported yet; dense Gemma 4 "
                         "models (E2B, E4B, 12B, 31B) are");
  c.embd_scale = std::sqrt((float)c.n_embd);
  c.final_logit_softcap = (float)meta.opt_float("final_logit_softcapping", 0.0);
  require(c.final_logit_softcap >= 0, meta.where() + "final_logit_softcapping must not be negative");
  c.n_embd_per_layer = meta.opt_count("embedding_length_per_layer_input", 0);

  const int window = meta.opt_count("attention.sliding_window", 0);
  std::vector<bool> sliding((size_t)c.n_layer, false);
  if (auto pattern = meta.per_layer_flags("attention.sliding_window_pattern", c.n_layer)) sliding = *pattern;
  bool any_sliding = false;
  for (bool s : sliding) any_sliding = any_sliding || s;
  require(!any_sliding || window > 0, meta.where() + "sliding layers but no attention.sliding_window");

  const int hd_global = c.layers[0].head_dim;  // key_length, read by the common step
  const int hd_swa = meta.opt_int("attention.key_length_swa", hd_global);
  const int hd_swa_v = meta.opt_int("attention.value_length_swa", hd_swa);
  require(hd_swa == hd_swa_v, meta.where() + "key_length_swa != value_length_swa is not supported");
  require(hd_swa % 2 == 0 && hd_swa <= 1024, meta.where() + "key_length_swa must be even and at most 1024");
  const int rope_swa = meta.opt_int("rope.dimension_count_swa", hd_swa);
  require(rope_swa <= hd_swa && rope_swa % 2 == 0, meta.where() + "invalid rope.dimension_count_swa");
  const float base_swa = (float)meta.opt_float("rope.freq_base_swa", 10000.0);
  require(base_swa > 1, meta.where() + "invalid rope.freq_base_swa");

  const int n_shared = meta.opt_count("attention.shared_kv_layers", 0);
  require(n_shared < c.n_layer, meta.where() + "attention.shared_kv_layers must be below block_count");
  const int first_shared = c.n_layer - n_shared;

  for (int i = 0; i < c.n_layer; ++i) {
    LayerConfig& l = c.layers[(size_t)i];
    l.post_norms = true;
    l.ffn_act = FfnActivation::GeluTanh;
    l.attn_scale = 1.0f;
    l.v_norm = true;
    if (sliding[(size_t)i]) {
      l.sliding_window = window;
      l.head_dim = hd_swa;
      l.rope_dim = rope_swa;
      l.rope_base = base_swa;
      l.rope_freq_scale = 1.0f;
    } else {
      l.rope_freq_factors = true;
    }
    if (i >= first_shared) {
      int src = -1;
      for (int j = first_shared - 1; j >= 0 && src < 0; --j)
        if (sliding[(size_t)j] == sliding[(size_t)i]) src = j;
      require(src >= 0, meta.where() + "shared-KV layer " + std::to_string(i) +
                            " has no earlier layer of its kind to share with");
      const LayerConfig& s = c.layers[(size_t)src];
      require(s.n_head_kv == l.n_head_kv,
              meta.where() + "shared-KV layer " + std::to_string(i) + " has a KV head count unlike layer " +
                  std::to_string(src));
      l.kv_layer = src;
    }
  }
}

}  // namespace

const Architecture& arch_gemma4() {
  static const Architecture a{"gemma4", RopeStyle::NeoX, /*qk_norm=*/true, /*qkv_bias=*/false, configure_gemma4,
                              /*optional_v=*/true};
  return a;
}

}  // namespace oscar::model
