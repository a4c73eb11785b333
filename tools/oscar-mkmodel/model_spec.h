// What oscar-mkmodel writes: an architecture, its shapes (from a preset of a
// published model or from flags), a weight type mix and a seed.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "core/tensor_type.h"

namespace oscar::mkmodel {

struct ModelSpec {
  std::string arch = "qwen3";  // qwen3 | llama | qwen2 | gemma3 | gemma4
  std::string name = "oscar-random";
  int n_layer = 2;
  int n_embd = 128;
  int n_head = 4;
  int n_head_kv = 2;
  int head_dim = 32;
  int n_ff = 256;
  int n_ctx = 2048;
  int n_vocab = 0;  // 0: the size of the vocabulary written
  float rope_base = 1000000.0f;
  float rms_eps = 1e-6f;
  bool tied_output = false;
  std::string type = "f32";  // f32 f16 bf16 q8_0 ... q4_k_m q5_k_m
  uint64_t seed = 42;
  // Gemma only (0 / false: the feature is absent).
  int sliding_window = 0;       // window of the sliding layers (0: every layer global)
  int swa_period = 6;           // layer i is global when i % swa_period == swa_period - 1
  int head_dim_swa = 0;         // gemma4: head dim of sliding layers (0: head_dim)
  int n_head_kv_global = 0;     // gemma4: KV heads of global layers (0: n_head_kv)
  bool k_eq_v = false;          // gemma4: global layers have no attn_v (V from K)
  float rope_base_swa = 10000.0f;
  float rope_scale_linear = 0;  // gemma3: linear RoPE factor of global layers (0: none)
  float partial_rotary_global = 0.25f;  // gemma4: share of rotated pairs on global layers
  float final_softcap = 0;      // final_logit_softcapping (0: none)
  int n_embd_per_layer = 0;     // gemma4 per-layer embedding width (0: none)
  int n_kv_shared = 0;          // gemma4: last layers that reuse earlier layers' KV
  bool double_wide_ffn = false; // gemma4: the KV-shared layers' FFN is 2 x n_ff (E2B)
  bool layer_out_scale = false; // gemma4: blk.N.layer_output_scale
  // --k-outliers N[,SCALE[,QSCALE]] (qwen3, qwen2, llama; see outliers.h):
  // planted K/Q channels per head (0: none) and their RMS over the others'.
  int k_outliers = 0;
  float k_outlier_scale = 20.0f;
  float q_outlier_scale = 5.0f;
};

bool is_gemma(const ModelSpec& s);

// What one layer of the spec looks like (sliding or global, its head dim,
// KV heads, whether it has K/V projections of its own and a V projection).
struct LayerShape {
  bool sliding = false;
  int head_dim = 0;
  int n_head_kv = 0;
  bool own_kv = true;
  bool has_v = true;
  int n_ff = 0;  // FFN width
};
LayerShape layer_shape(const ModelSpec& s, int layer);
// Checks the spec's numbers fit together; throws Error naming the problem.
void validate_spec(const ModelSpec& s);

// Applies preset `name` for `arch` (tiny, qwen3-0.6b, qwen3-4b, qwen3-8b,
// llama-3.2-1b, llama-3.1-8b, qwen2.5-0.5b, gemma3-1b/4b/12b/27b,
// gemma4-e2b, gemma4-e4b, gemma4-31b); throws Error for an unknown one.
void apply_preset(ModelSpec& spec, const std::string& name);
std::vector<std::string> preset_names();

// llama.cpp's ftype number for general.file_type.
uint32_t file_type_of(const std::string& type);

// The storage type of one tensor under the spec's type mix (e.g. q4_k_m puts
// Q6_K on output.weight and on attn_v / ffn_down of some layers). Rows whose
// length is not a multiple of the chosen type's block fall back to a 32-block
// type, as llama.cpp's quantizer does.
TensorType tensor_type_for(const ModelSpec& spec, const std::string& tensor_name, int layer,
                           uint64_t row_length);

}  // namespace oscar::mkmodel
