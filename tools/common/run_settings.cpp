#include "run_settings.h"

#include <cerrno>
#include <cstdlib>
#include <fstream>
#include <random>
#include <sstream>

#include "core/error.h"
#include "kv/kv_cache.h"
#include "chat_setup.h"
#include "llama_flags.h"

namespace oscar::tools {

namespace {

int to_int(const std::string& flag, const std::string& v) { return flag_int(flag, v); }
float to_float(const std::string& flag, const std::string& v) { return flag_float(flag, v); }

// Every table a model tool shares (oscar-server adds its own group).
std::vector<FlagSpec> tool_specs(RunSettings& s) {
  std::vector<FlagSpec> specs = common_flag_specs(s);
  for (auto* more : {sampling_flag_specs, chat_flag_specs, cli_flag_specs, kv_flag_specs}) {
    auto part = more(s);
    specs.insert(specs.end(), std::make_move_iterator(part.begin()), std::make_move_iterator(part.end()));
  }
  return specs;
}

}  // namespace

std::string common_usage() {
  RunSettings dummy;
  return flags_help(tool_specs(dummy));
}

void apply_kv_env(RunSettings& s, const EnvLookup& env) {
  auto get = [&](const char* name) -> const char* {
    const char* v = env ? env(name) : std::getenv(name);
    return v && *v ? v : nullptr;
  };
  if (const char* v = get("LLAMA_KV_FUSED_FA")) s.kv_fused = to_int("LLAMA_KV_FUSED_FA", v) != 0;
  if (const char* v = get("LLAMA_KV_NO_HADAMARD")) s.kv_no_hadamard = to_int("LLAMA_KV_NO_HADAMARD", v) != 0;
  if (const char* v = get("LLAMA_KV_CLIP_RATIO")) s.kv_clip_k = s.kv_clip_v = to_float("LLAMA_KV_CLIP_RATIO", v);
  if (const char* v = get("LLAMA_KV_HP_SINK")) s.kv_hp_sink = to_int("LLAMA_KV_HP_SINK", v);
  if (const char* v = get("LLAMA_KV_HP_RECENT")) s.kv_hp_recent = to_int("LLAMA_KV_HP_RECENT", v);
}

namespace {

float clip_ratio(const std::string& flag, const std::string& v) {
  const float x = to_float(flag, v);
  if (!(x >= 0.0f && x <= 1.0f)) throw Error(flag + ": clip ratio must be in [0, 1], got '" + v + "'");
  return x;
}
}  // namespace

bool parse_kv_flag(RunSettings& s, const std::string& f, const std::function<std::string()>& next) {
  if (f == "--kv-hp-sink") s.kv_hp_sink = to_int(f, next());
  else if (f == "--kv-hp-recent") s.kv_hp_recent = to_int(f, next());
  else if (f == "--kv-clip-k") s.kv_clip_k = clip_ratio(f, next());
  else if (f == "--kv-clip-v") s.kv_clip_v = clip_ratio(f, next());
  else if (f == "--kv-group-size") s.kv_group_size = to_int(f, next());
  else if (f == "--kv-no-hadamard") s.kv_no_hadamard = true;
  else if (f == "--kv-fused-fa") s.kv_fused = to_int(f, next()) != 0;
  else if (f == "--kv-swa-type-k") s.kv_swa_k = kv::parse_cache_type(next());
  else if (f == "--kv-swa-type-v") s.kv_swa_v = kv::parse_cache_type(next());
  else if (f == "--kv-swa-slack") {
    s.kv_swa_slack = to_int(f, next());
    if (*s.kv_swa_slack < 0) throw Error(f + ": must not be negative");
  } else return false;
  return true;
}

std::string kv_usage() {
  return "  --kv-hp-sink N           f16 sink tokens of a quantized cache (LLAMA_KV_HP_SINK; q2_0: 512)\n"
         "  --kv-hp-recent N         f16 recent tokens (LLAMA_KV_HP_RECENT; q2_0: 2048)\n"
         "  --kv-clip-k F, --kv-clip-v F  q2_0 clip ratios (LLAMA_KV_CLIP_RATIO sets both; 0.96/0.92; 0: off)\n"
         "  --kv-group-size N        q2_0 group size (default: the head dim)\n"
         "  --kv-no-hadamard         no data-free Hadamard without rotations (LLAMA_KV_NO_HADAMARD=1)\n"
         "  --kv-fused-fa 0|1        0: reference attention path (LLAMA_KV_FUSED_FA)\n"
         "  --kv-swa-type-k T, --kv-swa-type-v T  K/V types of sliding-window layers (default: f16,\n"
         "                           or the main type when it is a float type)\n"
         "  --kv-swa-slack N         ring positions kept beyond the window (default 512)\n";
}

kv::KvCacheConfig kv_config(const RunSettings& s, int n_seq, int n_ctx_seq) {
  kv::KvCacheConfig c;
  c.type_k = s.cache_k;
  c.type_v = s.cache_v;
  c.n_seq = n_seq;
  c.n_ctx_seq = n_ctx_seq;
  const bool q2 = s.cache_k == kv::CacheType::Q2_0 || s.cache_v == kv::CacheType::Q2_0;
  c.hp_sink = s.kv_hp_sink.value_or(q2 ? 512 : 0);
  c.hp_recent = s.kv_hp_recent.value_or(q2 ? 2048 : 0);
  c.q2_k = {s.kv_clip_k.value_or(0.96f), s.kv_group_size};
  c.q2_v = {s.kv_clip_v.value_or(0.92f), s.kv_group_size};
  c.type_k_swa = s.kv_swa_k;
  c.type_v_swa = s.kv_swa_v;
  if (s.kv_swa_slack) c.swa_slack = *s.kv_swa_slack;
  return c;
}

std::string default_model() {
#ifdef OSCAR_DEFAULT_MODEL
  return OSCAR_DEFAULT_MODEL;
#else
  return "";
#endif
}

RunSettings parse_run_settings(int argc, char** argv, ExtraFlags* extra, const EnvLookup& env) {
  RunSettings s;
  apply_kv_env(s, env);
  const std::vector<FlagSpec> specs = tool_specs(s);
  UntabledFlags untabled;
  if (extra) untabled = [extra](const std::string& f, const std::function<std::string()>& next) {
    return extra->handle(f, next);
  };
  const FlagParseResult r = parse_flags(specs, argc, argv, env, untabled);
  s.flag_notes.insert(s.flag_notes.end(), r.notes.begin(), r.notes.end());
  check_run_settings(s);
  return s;
}

void check_run_settings(RunSettings& s) {
  if (!s.seed_given) s.sampling.seed = std::random_device{}();
  if (s.n_ctx < 0) throw Error("-c: must not be negative");
  if (s.n_batch <= 0 || s.n_ubatch <= 0) throw Error("-b and -ub must be positive");
  if (s.n_threads < 0) throw Error("-t: must not be negative");
  if (s.kv_hp_sink.value_or(0) < 0 || s.kv_hp_recent.value_or(0) < 0)
    throw Error("--kv-hp-sink / --kv-hp-recent must not be negative");
  if (s.kv_group_size < 0) throw Error("--kv-group-size must not be negative");
  // Both: a flag may override one of the two values LLAMA_KV_CLIP_RATIO set (NaN fails too).
  for (const auto& c : {s.kv_clip_k, s.kv_clip_v})
    if (c && !(*c >= 0.0f && *c <= 1.0f)) throw Error("LLAMA_KV_CLIP_RATIO must be in [0, 1]");
  if (!s.model_url.empty() && !s.hf_repo.empty()) throw Error("-mu and -hf name two models; give one");
  check_chat_template_flag(s);
}

}  // namespace oscar::tools
