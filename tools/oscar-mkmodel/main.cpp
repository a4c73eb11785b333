// oscar-mkmodel: writes a deterministic random-weight GGUF of a real
// architecture and shape, streaming one tensor at a time.
//
//   oscar-mkmodel --arch qwen3 --preset tiny --type q8_0 -o tiny.gguf
//   oscar-mkmodel --preset qwen3-4b --type q4_k_m -o qwen3-4b-q4km.gguf
#include <cmath>
#include <cstdio>
#include <cstring>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "core/cpu_features.h"
#include "core/error.h"
#include "core/thread_pool.h"
#include "default_vocab.h"
#include "kv_rotations.h"
#include "gguf/gguf_writer.h"
#include "model_spec.h"
#include "outliers.h"
#include "quant/quant.h"
#include "random_weights.h"
#include "fim_tokens.h"
#include "script_weights.h"
#include "tensor_plan.h"
#include "vocab_source.h"

using namespace oscar;
using namespace oscar::mkmodel;

namespace {

void usage() {
  std::fprintf(stderr,
               "usage: oscar-mkmodel [--arch qwen3|llama|qwen2|gemma3|gemma4] [--preset NAME] [--layers N]\n"
               "         [--embd N] [--heads N] [--kv-heads N] [--head-dim N] [--ffn N] [--ctx N] [--vocab N]\n"
               "         [--rope-base F] [--tied] [--type T] [--seed N] [--tokenizer-json PATH]\n"
               "         [--kv-rot random|hadamard|DIR] [--script FILE] [--k-outliers N[,SCALE[,QSCALE]]]\n"
               "         [--fim] [--pooling-type N] [-t THREADS] -o FILE\n"
               "gemma:   [--sliding-window N] [--swa-period N] [--head-dim-swa N] [--kv-heads-global N]\n"
               "         [--kv-shared N] [--double-wide-ffn] [--per-layer-embd N] [--softcap F]\n"
               "         (--double-wide-ffn: the KV-shared layers' FFN is twice --ffn, as in gemma4-e2b)\n"
               "planted: --k-outliers N[,SCALE[,QSCALE]] (qwen3 qwen2 llama) gives K the structure of trained\n"
               "         LLMs: in every layer, N channels among each head's d/4 lowest-frequency RoPE channels\n"
               "         (drawn per layer) carry a value of mostly fixed sign, fed by a massive residual\n"
               "         channel 0, with RMS SCALE (default 20) times the other channels'; the same channels\n"
               "         of the queries get the same signs at QSCALE (default SCALE/4). Random weights alone\n"
               "         rank KV rotations about equal; this gives calibrated rotations something real to\n"
               "         find (see outliers.h)\n"
               "script:  --script FILE writes a qwen3 model whose greedy output follows the file's token\n"
               "         chains (JSON; see script_weights.h); the hidden size becomes vocabulary + 1, rounded up to 32\n"
               "pooling: --pooling-type N writes {arch}.pooling_type (llama.cpp's 0 none 1 mean 2 cls 3 last 4 rank),\n"
               "         as embedding models carry it\n"
               "fim:     --fim adds Qwen2.5-Coder's fill-in-the-middle tokens and their tokenizer.ggml.fim_* keys\n"
               "types: f32 f16 bf16 q8_0 q4_0 q4_1 q5_0 q5_1 q2_k q3_k q4_k q5_k q6_k q4_k_m q5_k_m\n"
               "presets: tiny (of --arch) qwen3-0.6b qwen3-4b qwen3-8b llama-3.2-1b llama-3.1-8b qwen2.5-0.5b\n"
               "         gemma3-1b gemma3-4b gemma3-12b gemma3-27b gemma4-e2b gemma4-e4b gemma4-31b\n");
}

void write_model(const ModelSpec& s, std::vector<gguf::KeyValue> vocab, const std::string& path,
                 ThreadPool& pool, const std::string& kv_rot, const ScriptTokens* script) {
  const CpuFeatures cpu = detect_cpu();
  quant::QuantTable table(cpu);
  gguf::GgufWriter w(path);
  w.add_kv("general.architecture", gguf::Value::str(s.arch));
  w.add_kv("general.name", gguf::Value::str(s.name));
  w.add_kv("general.file_type", gguf::Value::u32(file_type_of(s.type)));
  for (auto& kv : arch_metadata(s)) w.add_kv(kv.key, std::move(kv.value));
  for (auto& kv : vocab) w.add_kv(kv.key, std::move(kv.value));

  auto plan = plan_tensors(s);
  if (script) apply_script(*script, s, plan);
  for (const auto& t : plan) w.add_tensor(t.name, t.type, t.shape);
  // Rotation tensors go last, in the order oscar-bake writes them.
  LayerRotations rot;
  if (!kv_rot.empty()) {
    std::vector<int> dims;
    for (int i = 0; i < s.n_layer; ++i) dims.push_back(layer_shape(s, i).head_dim);
    rot = make_kv_rotations(kv_rot, dims, s.seed);
    for (int i = 0; i < s.n_layer; ++i) {
      const uint64_t d = (uint64_t)dims[(size_t)i];
      w.add_tensor("blk." + std::to_string(i) + ".attn_k_rot.weight", TensorType::F32, {d, d});
    }
    for (int i = 0; i < s.n_layer; ++i) {
      const uint64_t d = (uint64_t)dims[(size_t)i];
      w.add_tensor("blk." + std::to_string(i) + ".attn_v_rot.weight", TensorType::F32, {d, d});
    }
  }

  uint64_t total_bytes = 0;
  for (const auto& t : plan) {
    const uint64_t cols = t.shape[0];
    const uint64_t rows = t.shape.size() > 1 ? t.shape[1] : 1;
    const quant::QuantTraits& q = table.get(t.type, t.name.c_str());
    const size_t rb = *row_bytes(t.type, cols);
    // Rows are generated and encoded in parallel, a chunk at a time.
    const uint64_t chunk_rows = std::max<uint64_t>(1, (16u << 20) / (cols * 4));
    std::vector<uint8_t> buf;
    for (uint64_t r0 = 0; r0 < rows; r0 += chunk_rows) {
      const uint64_t nr = std::min(chunk_rows, rows - r0);
      buf.resize((size_t)nr * rb);
      pool.parallel_for((size_t)nr, 1, [&](size_t b, size_t e) {
        std::vector<float> row((size_t)cols);
        for (size_t r = b; r < e; ++r) {
          if (!t.values.empty()) {
            std::copy(t.values.begin() + (long)((r0 + r) * cols), t.values.begin() + (long)((r0 + r + 1) * cols),
                      row.begin());
          } else {
            Rng rng(hash_name(s.seed, t.name, r0 + r));
            for (auto& v : row) v = t.init.mean + t.init.std * rng.normal();
            plant_outliers(s, t.name, r0 + r, row);
          }
          q.quantize(row.data(), buf.data() + r * rb, (int64_t)cols);
        }
      });
      w.write_tensor_data(buf);
    }
    total_bytes += (uint64_t)rows * rb;
  }
  auto bytes_of = [](const std::vector<float>& m) {
    return std::span<const uint8_t>(reinterpret_cast<const uint8_t*>(m.data()), m.size() * 4);
  };
  for (const auto& m : rot.k) w.write_tensor_data(bytes_of(m));
  for (const auto& m : rot.v) w.write_tensor_data(bytes_of(m));
  w.finish();
  std::fprintf(stderr, "oscar-mkmodel: wrote %s: %s %s, %d layers, embd %d, vocab %d, %zu tensors, %.1f MiB of weights\n",
               path.c_str(), s.arch.c_str(), s.type.c_str(), s.n_layer, s.n_embd, s.n_vocab, plan.size(),
               (double)total_bytes / (1 << 20));
}

int parse_int(const char* flag, const char* v) {
  char* end = nullptr;
  const long x = std::strtol(v, &end, 10);
  if (!*v || *end || x <= 0 || x > (1L << 30)) throw Error(std::string(flag) + ": expected a positive integer, got '" + v + "'");
  return (int)x;
}

int parse_count(const char* flag, const char* v) {
  char* end = nullptr;
  const long x = std::strtol(v, &end, 10);
  if (!*v || *end || x < 0 || x > (1L << 30)) throw Error(std::string(flag) + ": expected a count, got '" + v + "'");
  return (int)x;
}

}  // namespace

int main(int argc, char** argv) {
  try {
    ModelSpec s;
    std::string out, preset, tokenizer_json, kv_rot, script_path, k_outliers;
    int threads = 0;
    bool double_wide = false;
    bool fim = false;
    int pooling_type = -1;
    // Flags are applied after the preset, so "--preset tiny --layers 4" works.
    std::vector<std::pair<std::string, std::string>> overrides;
    for (int i = 1; i < argc; ++i) {
      const std::string f = argv[i];
      auto val = [&]() -> std::string {
        if (i + 1 >= argc) throw Error(f + ": missing value");
        return argv[++i];
      };
      if (f == "-h" || f == "--help") {
        usage();
        return 0;
      } else if (f == "-o" || f == "--output") out = val();
      else if (f == "--preset") preset = val();
      else if (f == "--arch") s.arch = val();
      else if (f == "--tokenizer-json") tokenizer_json = val();
      else if (f == "--kv-rot") kv_rot = val();
      else if (f == "--script") script_path = val();
      else if (f == "--k-outliers") k_outliers = val();
      else if (f == "--tied") overrides.emplace_back(f, "");
      else if (f == "--double-wide-ffn") double_wide = true;
      else if (f == "--fim") fim = true;
      else if (f == "--pooling-type") pooling_type = parse_int("--pooling-type", val().c_str());
      else if (f == "-t" || f == "--threads") threads = parse_int("-t", val().c_str());
      else if (f == "--layers" || f == "--embd" || f == "--heads" || f == "--kv-heads" || f == "--head-dim" ||
               f == "--ffn" || f == "--ctx" || f == "--vocab" || f == "--type" || f == "--seed" || f == "--rope-base" ||
               f == "--name" || f == "--sliding-window" || f == "--swa-period" || f == "--head-dim-swa" ||
               f == "--kv-heads-global" || f == "--kv-shared" || f == "--per-layer-embd" || f == "--softcap")
        overrides.emplace_back(f, val());
      else throw Error("unknown flag '" + f + "' (see --help)");
    }
    validate_spec(s);  // the architecture name, before a preset uses it
    if (!preset.empty()) apply_preset(s, preset);
    for (const auto& [f, v] : overrides) {
      if (f == "--layers") s.n_layer = parse_int(f.c_str(), v.c_str());
      else if (f == "--embd") s.n_embd = parse_int(f.c_str(), v.c_str());
      else if (f == "--heads") s.n_head = parse_int(f.c_str(), v.c_str());
      else if (f == "--kv-heads") s.n_head_kv = parse_int(f.c_str(), v.c_str());
      else if (f == "--head-dim") s.head_dim = parse_int(f.c_str(), v.c_str());
      else if (f == "--ffn") s.n_ff = parse_int(f.c_str(), v.c_str());
      else if (f == "--ctx") s.n_ctx = parse_int(f.c_str(), v.c_str());
      else if (f == "--vocab") s.n_vocab = parse_int(f.c_str(), v.c_str());
      else if (f == "--type") s.type = v;
      else if (f == "--name") s.name = v;
      else if (f == "--seed") s.seed = std::stoull(v);
      else if (f == "--rope-base") s.rope_base = std::stof(v);
      else if (f == "--sliding-window") s.sliding_window = parse_count(f.c_str(), v.c_str());
      else if (f == "--swa-period") s.swa_period = parse_int(f.c_str(), v.c_str());
      else if (f == "--head-dim-swa") s.head_dim_swa = parse_int(f.c_str(), v.c_str());
      else if (f == "--kv-heads-global") s.n_head_kv_global = parse_int(f.c_str(), v.c_str());
      else if (f == "--kv-shared") s.n_kv_shared = parse_count(f.c_str(), v.c_str());
      else if (f == "--per-layer-embd") s.n_embd_per_layer = parse_count(f.c_str(), v.c_str());
      else if (f == "--softcap") s.final_softcap = std::stof(v);
      else if (f == "--tied") s.tied_output = true;
    }
    if (double_wide) s.double_wide_ffn = true;
    if (!k_outliers.empty()) parse_k_outliers(k_outliers, s);
    if (s.k_outliers > 0 && !script_path.empty()) throw Error("--k-outliers and --script do not go together");
    if (out.empty()) throw Error("missing -o FILE (see --help)");
    for (auto& c : s.type) c = (char)std::tolower((unsigned char)c);
    file_type_of(s.type);
    if (s.n_head % s.n_head_kv != 0) throw Error("--heads must be a multiple of --kv-heads");
    if (s.head_dim % 2 != 0) throw Error("--head-dim must be even");
    if (s.n_kv_shared >= s.n_layer) throw Error("--kv-shared must be below the layer count");
    if (!(s.final_softcap >= 0)) throw Error("--softcap must not be negative");
    validate_spec(s);

    std::vector<gguf::KeyValue> vocab =
        tokenizer_json.empty() ? default_vocab(s) : vocab_from_tokenizer_json(tokenizer_json);
    if (fim) add_fim_tokens(vocab);  // before the script, whose chains may use them
    if (pooling_type >= 0) {
      if (pooling_type > 4) throw Error("--pooling-type must be 0..4");
      vocab.push_back({s.arch + ".pooling_type", gguf::Value::u32((uint32_t)pooling_type)});  // written with the rest
    }
    std::optional<ScriptTokens> script;
    if (!script_path.empty()) script = add_script_tokens(load_script(script_path), vocab);
    const int n_tokens = vocab_size(vocab);
    if (s.n_vocab == 0) s.n_vocab = n_tokens;
    if (s.n_vocab < n_tokens)
      throw Error("--vocab " + std::to_string(s.n_vocab) + " is smaller than the tokenizer's " +
                  std::to_string(n_tokens) + " tokens");
    // Like converted models whose embedding has more rows than the tokenizer.
    if (s.n_vocab > n_tokens) pad_vocab(vocab, s.n_vocab);
    // One hidden dimension per token (one-hot embeddings) and one for the marker.
    if (script) s.n_embd = script_embd(s.n_vocab);
    ThreadPool pool(threads);
    write_model(s, std::move(vocab), out, pool, kv_rot, script ? &*script : nullptr);
    return 0;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "oscar-mkmodel: error: %s\n", e.what());
    return 1;
  }
}
