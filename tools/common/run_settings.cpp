#include "run_settings.h"

#include <cerrno>
#include <cstdlib>
#include <fstream>
#include <random>
#include <sstream>

#include "core/error.h"
#include "kv/kv_cache.h"

namespace oscar::tools {

namespace {

int to_int(const std::string& flag, const std::string& v) {
  errno = 0;
  char* end = nullptr;
  const long x = std::strtol(v.c_str(), &end, 10);
  if (v.empty() || *end || errno || x < -(1L << 31) || x > (1L << 31) - 1)
    throw Error(flag + ": expected an integer, got '" + v + "'");
  return (int)x;
}

float to_float(const std::string& flag, const std::string& v) {
  errno = 0;
  char* end = nullptr;
  const float x = std::strtof(v.c_str(), &end);
  if (v.empty() || *end || errno) throw Error(flag + ": expected a number, got '" + v + "'");
  return x;
}

std::string read_file(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  if (!f) throw Error("cannot read '" + path + "'");
  std::stringstream ss;
  ss << f.rdbuf();
  return ss.str();
}

}  // namespace

std::string common_usage() {
  return "  -m, --model FILE         GGUF model (default: " + default_model() + ")\n"
         "  -p, --prompt TEXT        prompt\n"
         "  -f, --file FILE          prompt from a file\n"
         "  -n, --n-predict N        tokens to generate (-1: until end of generation)\n"
         "  -c, --ctx-size N         context size (0: the model's)\n"
         "  -t, --threads N          CPU threads (default: all)\n"
         "  -b, --batch-size N       logical batch size\n"
         "  -ub, --ubatch-size N     physical batch size\n"
         "  -ctk, --cache-type-k T   K cache type: f32 f16 bf16 q8_0 q4_0 q2_0\n"
         "  -ctv, --cache-type-v T   V cache type\n"
         "  -fa, --flash-attn on|off|auto\n"
         "  -ngl, --n-gpu-layers N   accepted; this build has no GPU backend\n"
         "  --mmap, --no-mmap        map the model file, or read it into memory (default: read; with\n"
         "                           huge pages, decode streams the weights faster)\n"
         "  --temp F --top-k N --top-p F --min-p F --typical F\n"
         "  --repeat-penalty F --repeat-last-n N --frequency-penalty F --presence-penalty F\n"
         "  --seed N                 sampling seed\n"
         "  -v, --verbose\n"
         "  -cnv, -no-cnv            conversation mode on/off (default: on when the model has a chat\n"
         "                           template and no -p/-f is given)\n"
         "  -sys, --system-prompt S  system message of the conversation\n"
         "  --chat-template-file F   Jinja chat template instead of the model's\n"
         "  --grammar G, --grammar-file F        constrain the output to a GBNF grammar\n"
         "  -j, --json-schema S, -jf, --json-schema-file F  constrain the output to a JSON Schema\n"
         "  --reasoning-format none|deepseek  show thinking separately (deepseek) or raw (none)\n" +
         kv_usage();
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
  bool seed_given = false;
  apply_kv_env(s, env);
  for (int i = 1; i < argc; ++i) {
    const std::string f = argv[i];
    auto next = [&]() -> std::string {
      if (i + 1 >= argc) throw Error(f + ": missing value");
      return argv[++i];
    };
    if (f == "-m" || f == "--model") s.model = next();
    else if (f == "-p" || f == "--prompt") s.prompt = next();
    else if (f == "-f" || f == "--file") {
      s.prompt_file = next();
      s.prompt = read_file(s.prompt_file);
    } else if (f == "-n" || f == "--n-predict" || f == "--predict") s.n_predict = to_int(f, next());
    else if (f == "-c" || f == "--ctx-size") s.n_ctx = to_int(f, next());
    else if (f == "-t" || f == "--threads") s.n_threads = to_int(f, next());
    else if (f == "-b" || f == "--batch-size") s.n_batch = to_int(f, next());
    else if (f == "-ub" || f == "--ubatch-size") s.n_ubatch = to_int(f, next());
    else if (f == "-ctk" || f == "--cache-type-k") s.cache_k = kv::parse_cache_type(next());
    else if (f == "-ctv" || f == "--cache-type-v") s.cache_v = kv::parse_cache_type(next());
    else if (f == "-fa" || f == "--flash-attn") {
      s.flash_attn = next();
      if (s.flash_attn != "on" && s.flash_attn != "off" && s.flash_attn != "auto")
        throw Error("-fa: expected on, off or auto, got '" + s.flash_attn + "'");
    } else if (f == "-ngl" || f == "--n-gpu-layers" || f == "--gpu-layers") s.n_gpu_layers = to_int(f, next());
    else if (f == "--mmap") s.use_mmap = true;
    else if (f == "--no-mmap") s.use_mmap = false;
    else if (f == "--temp") s.sampling.temperature = to_float(f, next());
    else if (f == "--top-k") s.sampling.top_k = to_int(f, next());
    else if (f == "--top-p") s.sampling.top_p = to_float(f, next());
    else if (f == "--min-p") s.sampling.min_p = to_float(f, next());
    else if (f == "--typical") s.sampling.typical_p = to_float(f, next());
    else if (f == "--repeat-penalty") s.sampling.repeat_penalty = to_float(f, next());
    else if (f == "--repeat-last-n") s.sampling.penalty_last_n = to_int(f, next());
    else if (f == "--frequency-penalty") s.sampling.frequency_penalty = to_float(f, next());
    else if (f == "--presence-penalty") s.sampling.presence_penalty = to_float(f, next());
    else if (f == "-s" || f == "--seed") {
      s.sampling.seed = (uint64_t)(uint32_t)to_int(f, next());
      seed_given = true;
    } else if (f == "--verbose-prompt") s.verbose_prompt = true;
    else if (f == "-no-cnv" || f == "--no-conversation") s.no_cnv = true;
    else if (f == "-cnv" || f == "--conversation") s.conversation = true;
    else if (f == "-sys" || f == "--system-prompt") s.system_prompt = next();
    else if (f == "--dump-logits") s.dump_logits = next();
    else if (f == "--chat-template-file") s.chat_template_file = next();
    else if (f == "--grammar") s.grammar = next();
    else if (f == "--grammar-file") s.grammar = read_file(next());
    else if (f == "-j" || f == "--json-schema") s.json_schema = next();
    else if (f == "-jf" || f == "--json-schema-file") s.json_schema = read_file(next());
    else if (f == "--jinja") continue;  // always on: templates are rendered with our Jinja engine
    else if (f == "--reasoning-format") {
      s.reasoning_format = next();
      if (s.reasoning_format != "none" && s.reasoning_format != "deepseek" && s.reasoning_format != "auto")
        throw Error("--reasoning-format: expected none or deepseek, got '" + s.reasoning_format + "'");
      if (s.reasoning_format == "auto") s.reasoning_format = "deepseek";
    }
    else if (parse_kv_flag(s, f, next)) continue;
    else if (f == "-v" || f == "--verbose") s.verbose = true;
    else if (extra && extra->handle(f, next)) continue;
    else throw Error("unknown flag '" + f + "' (see --help)");
  }
  if (!seed_given) s.sampling.seed = std::random_device{}();
  if (s.n_ctx < 0) throw Error("-c: must not be negative");
  if (s.n_batch <= 0 || s.n_ubatch <= 0) throw Error("-b and -ub must be positive");
  if (s.n_threads < 0) throw Error("-t: must not be negative");
  if (s.kv_hp_sink.value_or(0) < 0 || s.kv_hp_recent.value_or(0) < 0)
    throw Error("--kv-hp-sink / --kv-hp-recent must not be negative");
  if (s.kv_group_size < 0) throw Error("--kv-group-size must not be negative");
  // Both: a flag may override one of the two values LLAMA_KV_CLIP_RATIO set (NaN fails too).
  for (const auto& c : {s.kv_clip_k, s.kv_clip_v})
    if (c && !(*c >= 0.0f && *c <= 1.0f)) throw Error("LLAMA_KV_CLIP_RATIO must be in [0, 1]");
  return s;
}

}  // namespace oscar::tools
