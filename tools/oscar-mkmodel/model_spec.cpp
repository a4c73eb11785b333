#include "model_spec.h"

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
}  // namespace

std::vector<std::string> preset_names() {
  std::vector<std::string> r{"tiny"};
  for (const auto& p : kPresets) r.push_back(p.name);
  return r;
}

void apply_preset(ModelSpec& s, const std::string& name) {
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
  if (ends_with(name, "_norm.weight") || ends_with(name, ".bias")) return TensorType::F32;
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
