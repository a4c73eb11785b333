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
  std::string arch = "qwen3";  // qwen3 | llama | qwen2
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
};

// Applies preset `name` for `arch` (tiny, qwen3-0.6b, qwen3-4b, qwen3-8b,
// llama-3.2-1b, llama-3.1-8b, qwen2.5-0.5b); throws Error for an unknown one.
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
