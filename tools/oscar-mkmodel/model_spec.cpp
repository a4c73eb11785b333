#include "model_spec.h"

#include <algorithm>

#include "core/error.h"

namespace oscar::mkmodel {

namespace {
struct Preset {
  const char* name;
  const char* arch;
  int n_layer, n_embd, n_head, n_head_kv, head_dim, n_ff, n_ctx, n_vocab;
  float rope_base;
  bool tied;
};
// Shapes of the published configs (config.json of each model).
const Preset kPresets[] = {
    {"qwen3-0.6b", "qwen3", 28, 1024, 16, 8, 128, 3072, 40960, 151936, 1000000.0f, true},
    {"qwen3-4b", "qwen3", 36, 2560, 32, 8, 128, 9728, 262144, 151936, 5000000.0f, true},
    {"qwen3-8b", "qwen3", 36, 4096, 32, 8, 128, 12288, 40960, 151936, 1000000.0f, false},
    {"llama-3.2-1b", "llama", 16, 2048, 32, 8, 64, 8192, 131072, 128256, 500000.0f, true},
    {"llama-3.1-8b", "llama", 32, 4096, 32, 8, 128, 14336, 131072, 128256, 500000.0f, false},
    {"qwen2.5-0.5b", "qwen2", 24, 896, 14, 2, 64, 4864, 32768, 151936, 1000000.0f, true},
};

// Gemma shapes from the published configs (config.json text_config; the
// GGUF vocabulary is the 262144 tokenizer entries: the converter drops the
// embedding's unused rows).
struct GemmaPreset {
  const char* name;
  const char* arch;
  int n_layer, n_embd, n_head, n_head_kv, head_dim, n_ff, n_ctx, window;
  float rope_scale_linear;
  // gemma4
  int head_dim_swa, n_head_kv_global;
  bool k_eq_v;
  float softcap;
  int swa_period;        // layer i is global when i % swa_period == swa_period - 1
  int n_embd_per_layer;  // hidden_size_per_layer_input
  int n_kv_shared;       // num_kv_shared_layers
  bool double_wide_ffn;  // use_double_wide_mlp: 2 x n_ff on the KV-shared layers
};
const GemmaPreset kGemmaPresets[] = {
    {"gemma3-1b", "gemma3", 26, 1152, 4, 1, 256, 6912, 32768, 512, 0, 0, 0, false, 0, 6, 0, 0, false},
    {"gemma3-4b", "gemma3", 34, 2560, 8, 4, 256, 10240, 131072, 1024, 8, 0, 0, false, 0, 6, 0, 0, false},
    {"gemma3-12b", "gemma3", 48, 3840, 16, 8, 256, 15360, 131072, 1024, 8, 0, 0, false, 0, 6, 0, 0, false},
    {"gemma3-27b", "gemma3", 62, 5376, 32, 16, 128, 21504, 131072, 1024, 8, 0, 0, false, 0, 6, 0, 0, false},
    // E2B. Source: google/gemma-4-E2B(-it) config.json, text_config. 35 layers,
    // hidden 1536, 8 query heads and 1 KV head on every layer
    // (num_global_key_value_heads null), head dim 256 sliding and 512 global
    // (global_head_dim), attention_k_eq_v false, sliding_window 512.
    // layer_types is 4 sliding then 1 full (period 5). num_kv_shared_layers
    // 20, hidden_size_per_layer_input 256. intermediate_size 6144 with
    // use_double_wide_mlp true, so the 20 KV-shared layers 15..34 have
    // 12288 (transformers' Gemma4TextMLP doubles it there).
    // max_position_embeddings 131072, final_logit_softcapping 30. Checked
    // against the metadata of a published E2B GGUF (ollama gemma4:e2b):
    // head_count 8, head_count_kv 1, key_length 512 / key_length_swa 256,
    // shared_kv_layers 20, sliding_window 512, block_count 35,
    // embedding_length 1536, embedding_length_per_layer_input 256,
    // feed_forward_length a per-layer array.
    {"gemma4-e2b", "gemma4", 35, 1536, 8, 1, 512, 6144, 131072, 512, 0, 256, 1, false, 30, 5, 256, 20, true},
    // E4B. Source: google/gemma-4-E4B(-it) config.json, text_config. 42 layers,
    // hidden 2560, 8 query and 2 KV heads on every layer, head dim 256
    // sliding and 512 global, attention_k_eq_v false, sliding_window 512.
    // layer_types is 5 sliding then 1 full (period 6). num_kv_shared_layers
    // 18, hidden_size_per_layer_input 256. intermediate_size 10240 on every
    // layer (use_double_wide_mlp false). max_position_embeddings 131072,
    // final_logit_softcapping 30. NVIDIA Megatron-Bridge's E4B recipe gives
    // the same numbers: 42 layers, 2560 / 10240, 8 heads, 2 KV heads,
    // global head dim 512, KV shared across the last 18 layers, PLE dim 256.
    {"gemma4-e4b", "gemma4", 42, 2560, 8, 2, 512, 10240, 131072, 512, 0, 256, 2, false, 30, 6, 256, 18, false},
    // 31B: 5 sliding : 1 global, sliding head dim 256 / 16 KV heads, global
    // head dim 512 / 4 KV heads with V = K (attention_k_eq_v), no PLE.
    {"gemma4-31b", "gemma4", 60, 5376, 32, 16, 512, 21504, 262144, 1024, 0, 256, 4, true, 30, 6, 0, 0, false},
};

}  // namespace

bool is_gemma(const ModelSpec& s) { return s.arch == "gemma3" || s.arch == "gemma4"; }

LayerShape layer_shape(const ModelSpec& s, int i) {
  LayerShape l;
  l.sliding = is_gemma(s) && s.sliding_window > 0 && i % s.swa_period != s.swa_period - 1;
  const bool g4 = s.arch == "gemma4";
  l.head_dim = g4 && l.sliding && s.head_dim_swa > 0 ? s.head_dim_swa : s.head_dim;
  l.n_head_kv = g4 && !l.sliding && s.n_head_kv_global > 0 ? s.n_head_kv_global : s.n_head_kv;
  l.own_kv = !(g4 && i >= s.n_layer - s.n_kv_shared);
  l.has_v = l.own_kv && !(g4 && s.k_eq_v && !l.sliding);
  l.n_ff = g4 && s.double_wide_ffn && !l.own_kv ? 2 * s.n_ff : s.n_ff;
  return l;
}

void validate_spec(const ModelSpec& s) {
  if (s.arch != "qwen3" && s.arch != "llama" && s.arch != "qwen2" && !is_gemma(s))
    throw Error("--arch: unsupported architecture '" + s.arch + "' (qwen3, llama, qwen2, gemma3, gemma4)");
  if (s.swa_period < 1) throw Error("--swa-period must be positive");
  for (int i = 0; i < s.n_layer; ++i) {
    const LayerShape l = layer_shape(s, i);
    if (s.n_head % l.n_head_kv != 0)
      throw Error("layer " + std::to_string(i) + ": --heads must be a multiple of its KV heads");
    if (l.head_dim % 2 != 0) throw Error("head dims must be even");
  }
  if (s.n_kv_shared > 0) {
    if (s.arch != "gemma4") throw Error("--kv-shared is a gemma4 feature");
    // Every shared layer needs an earlier layer of its kind to read from.
    const int first = s.n_layer - s.n_kv_shared;
    for (int i = first; i < s.n_layer; ++i) {
      bool found = false;
      for (int j = 0; j < first && !found; ++j) found = layer_shape(s, j).sliding == layer_shape(s, i).sliding;
      if (!found) throw Error("--kv-shared " + std::to_string(s.n_kv_shared) + ": layer " + std::to_string(i) +
                              " has no earlier layer of its kind to share with");
    }
  }
  if (s.n_embd_per_layer > 0 && s.arch != "gemma4") throw Error("--per-layer-embd is a gemma4 feature");
  if (s.double_wide_ffn && (s.arch != "gemma4" || s.n_kv_shared == 0))
    throw Error("--double-wide-ffn is a gemma4 feature of the KV-shared layers (it needs --kv-shared)");
  if (s.k_outliers > 0) {
    if (is_gemma(s)) throw Error("--k-outliers is supported for qwen3, qwen2 and llama, not " + s.arch);
    if (s.k_outliers > std::max(2, s.head_dim / 4))
      throw Error("--k-outliers " + std::to_string(s.k_outliers) + ": at most " +
                  std::to_string(std::max(2, s.head_dim / 4)) +
                  " channels (the d/8 lowest-frequency RoPE pairs) at head dim " + std::to_string(s.head_dim));
  }
}

std::vector<std::string> preset_names() {
  std::vector<std::string> r{"tiny"};
  for (const auto& p : kPresets) r.push_back(p.name);
  for (const auto& p : kGemmaPresets) r.push_back(p.name);
  return r;
}

namespace {

// Tiny Gemma models: every feature of the architecture in a few layers, a
// sliding window of 16 (so short prompts already slide) and, for gemma4,
// head dims that differ between sliding (32) and global (64) layers.
void apply_tiny_gemma(ModelSpec& s) {
  s.n_layer = 6;
  s.n_embd = 128;
  s.n_head = 4;
  s.n_head_kv = 2;
  s.head_dim = 32;
  s.n_ff = 256;
  s.n_ctx = 512;
  s.n_vocab = 0;
  s.rope_base = 1000000.0f;
  s.rope_base_swa = 10000.0f;
  s.tied_output = true;
  s.sliding_window = 16;
  if (s.arch == "gemma3") {
    s.swa_period = 6;  // what the converter implies (it writes no pattern)
    s.rope_scale_linear = 8;
    return;
  }
  s.swa_period = 3;  // layers 2 and 5 global
  s.head_dim_swa = 32;
  s.head_dim = 64;
  s.n_head_kv_global = 1;
  s.k_eq_v = true;
  s.partial_rotary_global = 0.25f;
  s.final_softcap = 30;
  s.n_embd_per_layer = 16;
  s.n_kv_shared = 2;  // layer 4 reads layer 3's KV, layer 5 layer 2's
  s.layer_out_scale = true;
}

}  // namespace

void apply_preset(ModelSpec& s, const std::string& name) {
  if (name == "tiny" && is_gemma(s)) {
    apply_tiny_gemma(s);
    s.name = s.arch + "-tiny";
    return;
  }
  if (name == "tiny") {
    // Fast test model: small enough for exhaustive reference checks, with
    // GQA and more than one layer.
    s.n_layer = 2;
    s.n_embd = 128;
    s.n_head = 4;
    s.n_head_kv = 2;
    s.head_dim = 32;
    s.n_ff = 256;
    s.n_ctx = 512;
    s.n_vocab = 0;
    s.rope_base = s.arch == "llama" ? 10000.0f : 1000000.0f;
    s.tied_output = false;
    s.name = s.arch + "-tiny";
    return;
  }
  for (const auto& p : kPresets) {
    if (name != p.name) continue;
    s.arch = p.arch;
    s.n_layer = p.n_layer;
    s.n_embd = p.n_embd;
    s.n_head = p.n_head;
    s.n_head_kv = p.n_head_kv;
    s.head_dim = p.head_dim;
    s.n_ff = p.n_ff;
    s.n_ctx = p.n_ctx;
    s.n_vocab = p.n_vocab;
    s.rope_base = p.rope_base;
    s.tied_output = p.tied;
    s.name = std::string(p.name) + "-random";
    return;
  }
  for (const auto& p : kGemmaPresets) {
    if (name != p.name) continue;
    s = ModelSpec{.arch = p.arch, .type = s.type, .seed = s.seed};
    s.n_layer = p.n_layer;
    s.n_embd = p.n_embd;
    s.n_head = p.n_head;
    s.n_head_kv = p.n_head_kv;
    s.head_dim = p.head_dim;
    s.n_ff = p.n_ff;
    s.n_ctx = p.n_ctx;
    s.n_vocab = 262144;
    s.rope_base = 1000000.0f;
    s.tied_output = true;
    s.sliding_window = p.window;
    s.rope_scale_linear = p.rope_scale_linear;
    s.head_dim_swa = p.head_dim_swa;
    s.n_head_kv_global = p.n_head_kv_global;
    s.k_eq_v = p.k_eq_v;
    s.final_softcap = p.softcap;
    s.swa_period = p.swa_period;
    s.n_embd_per_layer = p.n_embd_per_layer;
    s.n_kv_shared = p.n_kv_shared;
    s.double_wide_ffn = p.double_wide_ffn;
    s.name = std::string(p.name) + "-random";
    return;
  }
  std::string all;
  for (const auto& n : preset_names()) all += " " + n;
  throw Error("unknown preset '" + name + "' (known:" + all + ")");
}

uint32_t file_type_of(const std::string& t) {
  struct F {
    const char* name;
    uint32_t ftype;
  };
  static const F kF[] = {{"f32", 0},   {"f16", 1},    {"q4_0", 2},  {"q4_1", 3},   {"q8_0", 7},
                         {"q5_0", 8},  {"q5_1", 9},   {"q2_k", 10}, {"q3_k", 12},  {"q4_k", 15},
                         {"q4_k_m", 15}, {"q5_k", 17}, {"q5_k_m", 17},
                         {"q6_k", 18}, {"bf16", 32}};
  for (const auto& f : kF)
    if (t == f.name) return f.ftype;
  throw Error("unknown --type '" + t +
              "' (known: f32 f16 bf16 q8_0 q4_0 q4_1 q5_0 q5_1 q2_k q3_k q4_k q5_k q6_k q4_k_m q5_k_m)");
}

namespace {
// llama.cpp's rule for which layers get more bits in the _M mixes: the first
// and last eighth of the layers and every third layer in between.
bool use_more_bits(int i, int n) { return i < n / 8 || i >= 7 * n / 8 || (i - n / 8) % 3 == 2; }

bool ends_with(const std::string& s, const char* suffix) {
  const std::string x(suffix);
  return s.size() >= x.size() && s.compare(s.size() - x.size(), x.size(), x) == 0;
}

TensorType fallback(TensorType t) {
  switch (t) {
    case TensorType::Q2_K:
    case TensorType::Q3_K: return TensorType::Q4_0;
    case TensorType::Q4_K: return TensorType::Q5_0;
    case TensorType::Q5_K: return TensorType::Q5_1;
    case TensorType::Q6_K: return TensorType::Q8_0;
    default: return t;
  }
}
}  // namespace

TensorType tensor_type_for(const ModelSpec& s, const std::string& name, int layer, uint64_t row_length) {
  file_type_of(s.type);  // validates
  // 1-D tensors (norms, biases) stay f32, as the converters write them.
  if (ends_with(name, "_norm.weight") || ends_with(name, ".bias") || ends_with(name, "layer_output_scale.weight") ||
      name == "rope_freqs.weight")
    return TensorType::F32;
  std::string base = s.type;
  TensorType t;
  if (base == "q4_k_m" || base == "q5_k_m") {
    t = base[1] == '5' ? TensorType::Q5_K : TensorType::Q4_K;
    const bool is_output = name == "output.weight" || (s.tied_output && name == "token_embd.weight");
    if (is_output) {
      t = TensorType::Q6_K;
    } else if ((ends_with(name, "attn_v.weight") || ends_with(name, "ffn_down.weight")) &&
               use_more_bits(layer, s.n_layer)) {
      t = TensorType::Q6_K;
    }
  } else {
    t = *parse_tensor_type(base);
  }
  if (row_length % type_info(t).block_size != 0) t = fallback(t);
  if (row_length % type_info(t).block_size != 0) t = TensorType::F16;
  return t;
}

}  // namespace oscar::mkmodel
