// Settings shared by the command-line tools (oscar-cli, oscar-perplexity,
// oscar-bench, oscar-server), parsed from llama.cpp-compatible flags. This is
// the edge: flags (and later the LLAMA_KV_* environment variables) are read
// here once and turned into plain settings passed down.
#pragma once

#include <functional>
#include <string>
#include <vector>

#include <optional>

#include "flag_table.h"
#include "kv/kv_cache.h"
#include "sampling/sampler.h"

namespace oscar::tools {

struct RunSettings {
  std::string model;
  std::string prompt;
  std::string prompt_file;
  int n_predict = -1;   // -1: until EOS or context end
  int n_ctx = 4096;     // 0: the model's training context
  int n_threads = 0;    // 0: all hardware threads
  int n_batch = 2048;   // logical batch (-b)
  int n_ubatch = 512;   // physical batch (-ub): tokens per forward call
  kv::CacheType cache_k = kv::CacheType::F16;
  kv::CacheType cache_v = kv::CacheType::F16;
  // OSCAR KV settings; unset values get their defaults in kv_config().
  std::optional<int> kv_hp_sink, kv_hp_recent;
  std::optional<float> kv_clip_k, kv_clip_v;
  int kv_group_size = 0;      // 0: the head dim
  bool kv_no_hadamard = false;
  bool kv_fused = true;       // LLAMA_KV_FUSED_FA=0: reference attention
  // Sliding-window layers (Gemma): their own K/V types (unset: the main type
  // when it is a float type, else f16) and ring slack beyond the window.
  std::optional<kv::CacheType> kv_swa_k, kv_swa_v;
  std::optional<int> kv_swa_slack;
  std::string flash_attn = "auto";  // on|off|auto (the CPU path is always fused-capable)
  int n_gpu_layers = 0;
  bool use_mmap = false;  // --mmap: map the weights instead of reading them (core/mapped_file.h)
  bool verbose_prompt = false;
  bool no_cnv = false;
  bool conversation = false;
  std::string system_prompt;
  std::string chat_template_file;           // overrides the model's template
  std::string reasoning_format = "deepseek";  // none | deepseek
  std::string dump_logits;
  bool verbose = false;
  sampling::SamplerSettings sampling;
  bool seed_given = false;      // --seed: requests without a seed use it
  bool ignore_eos = false;      // --ignore-eos: the default of requests
  bool cache_prompt = true;     // --no-cache-prompt: the default of requests
  // The model by name: downloaded into the cache (tools/common/download.h).
  std::string model_url;        // -mu
  std::string hf_repo;          // -hf user/repo[:quant]
  std::string hf_file;          // -hff
  std::string hf_token;         // -hft / HF_TOKEN
  bool offline = false;         // --offline: cache only, never the network
  // Chat templates (llama-server's names).
  std::string chat_template;         // --chat-template: a built-in name or Jinja text
  bool jinja = true;                 // --no-jinja: only built-in templates by name
  std::string chat_template_kwargs;  // --chat-template-kwargs: JSON object, default template variables
  std::string reasoning = "auto";    // -rea on|off|auto
  int reasoning_budget = -1;         // -1 unrestricted; 0: thinking off (enable_thinking=false)
  // Constrained decoding (src/grammar): the server's default for requests, oscar-cli's -p runs.
  std::string grammar;          // --grammar / --grammar-file (GBNF text)
  std::string json_schema;      // -j / -jf (JSON schema text)
  // An informational action instead of a run: version, license,
  // list-devices, cache-list, completion-bash ("" to run).
  std::string action;
  // One line per flag that was accepted but has no effect here, for the tool to log.
  std::vector<std::string> flag_notes;
};

// Parses argv into settings. Unknown flags and bad values throw Error naming
// the flag. `extra` receives flags the caller handles itself (returns true
// when it consumed the flag; it may read a value with next()).
struct ExtraFlags {
  virtual ~ExtraFlags() = default;
  virtual bool handle(const std::string& flag, const std::function<std::string()>& next) = 0;
};
// The LLAMA_KV_* variables are applied first, then the flags, so a flag
// beats a variable.
RunSettings parse_run_settings(int argc, char** argv, ExtraFlags* extra = nullptr,
                               const EnvLookup& env = nullptr);

// The OSCAR KV pieces on their own, for tools with their own flag syntax
// (oscar-bench): the LLAMA_KV_* variables, and one --kv-* flag (returns true
// when `flag` was one; reads its value with next()).
void apply_kv_env(RunSettings& s, const EnvLookup& env = nullptr);
bool parse_kv_flag(RunSettings& s, const std::string& flag, const std::function<std::string()>& next);
std::string kv_usage();

// The KV cache configuration the settings describe, with OSCAR's defaults
// when q2_0 is used: clip K 0.96 / V 0.92, sink 512, recent 2048.
kv::KvCacheConfig kv_config(const RunSettings& s, int n_seq, int n_ctx_seq);

// The model used when -m is not given (set at build time: OSCAR_DEFAULT_MODEL,
// the trained models/oscar-tiny by default); "" when there is none.
std::string default_model();

// --help of the model tools: llama.cpp's common, sampling and chat flags,
// oscar-cli's, and the OSCAR KV flags, grouped.
std::string common_usage();

// The checks every tool runs once all flags are in; draws the seed when none was given.
void check_run_settings(RunSettings& s);

}  // namespace oscar::tools
