#include "server_flags.h"

#include <cctype>
#include <cerrno>
#include <cmath>
#include <cstdlib>
#include <fstream>
#include <map>

#include "chat_setup.h"
#include "core/error.h"
#include "llama_flags.h"

namespace oscar::tools {

namespace {

constexpr FlagGroup E = FlagGroup::Example;
const char* const kNoMultimodal = "there is no multimodal (image/audio) input";
const char* const kNoDraft = "speculative decoding (draft models, n-gram lookup) is not implemented";
const char* const kNoUi = "the built-in chat page has no such setting";
const char* const kOneModel = "one server serves one model (no router mode)";
const char* const kNoPreset = "built-in model presets are not offered; name the model with -hf or -m";

int int_in(const std::string& flag, const std::string& v, int lo, int hi) {
  const int x = flag_int(flag, v);
  if (x < lo || x > hi)
    throw Error(flag + ": expected an integer in [" + std::to_string(lo) + ", " + std::to_string(hi) + "], got '" + v +
                "'");
  return x;
}

void add_key_file(std::vector<std::string>& keys, const std::string& path) {
  std::ifstream in(path);
  if (!in) throw Error("--api-key-file: cannot read '" + path + "'");
  std::string line;
  while (std::getline(in, line)) {
    while (!line.empty() && (line.back() == '\r' || line.back() == ' ')) line.pop_back();
    if (!line.empty()) keys.push_back(line);
  }
}

std::vector<FlagSpec> unsupported_server_specs() {
  std::vector<FlagSpec> v = {
      no_effect(E, {"-lcs", "--lookup-cache-static"}, "FNAME", "", kNoDraft),
      no_effect(E, {"-lcd", "--lookup-cache-dynamic"}, "FNAME", "", kNoDraft),
      no_effect(E, {"-ctxcp", "--ctx-checkpoints", "--swa-checkpoints"}, "N", "LLAMA_ARG_CTX_CHECKPOINTS",
                "slots keep their whole cache (sliding-window rings included), so no checkpoints are taken"),
      no_effect(E, {"-cms", "--checkpoint-min-step"}, "N", "LLAMA_ARG_CHECKPOINT_MIN_SPACING_NT",
                "no context checkpoints are taken"),
      on_off_no_effect(E, {"--cache-idle-slots"}, {"--no-cache-idle-slots"}, "LLAMA_ARG_CACHE_IDLE_SLOTS",
                       "idle slots keep their cache in place until a request reuses the slot"),
      no_effect(E, {"-r", "--reverse-prompt"}, "PROMPT", "", "interactive mode only; requests give their own stop strings"),
      no_effect(E, {"-sp", "--special"}, "", "", "special tokens are rendered as text only where the tokenizer does"),
      on_off_no_effect(E, {"--warmup"}, {"--no-warmup"}, "", "there is no warm-up run"),
      on_off_no_effect(E, {"-cb", "--cont-batching"}, {"-nocb", "--no-cont-batching"}, "LLAMA_ARG_CONT_BATCHING",
                       "batching is always continuous"),
      no_effect(E, {"-mm", "--mmproj"}, "FILE", "LLAMA_ARG_MMPROJ", kNoMultimodal),
      no_effect(E, {"-mmu", "--mmproj-url"}, "URL", "LLAMA_ARG_MMPROJ_URL", kNoMultimodal),
      on_off_no_effect(E, {"--mmproj-auto"}, {"--no-mmproj", "--no-mmproj-auto"}, "LLAMA_ARG_MMPROJ_AUTO", kNoMultimodal),
      on_off_no_effect(E, {"--mmproj-offload"}, {"--no-mmproj-offload"}, "LLAMA_ARG_MMPROJ_OFFLOAD", kNoMultimodal),
      no_effect(E, {"--image-min-tokens"}, "N", "LLAMA_ARG_IMAGE_MIN_TOKENS", kNoMultimodal),
      no_effect(E, {"--image-max-tokens"}, "N", "LLAMA_ARG_IMAGE_MAX_TOKENS", kNoMultimodal),
      no_effect(E, {"--embd-normalize"}, "N", "", "embeddings are always L2-normalised (llama-server's default)"),
      no_effect(E, {"--reuse-port"}, "", "LLAMA_ARG_REUSE_PORT", "the port is bound exclusively"),
      no_effect(E, {"--api-prefix"}, "PREFIX", "LLAMA_ARG_API_PREFIX", "the endpoints are served at the root only"),
      no_effect(E, {"--webui-config"}, "JSON", "LLAMA_ARG_WEBUI_CONFIG", kNoUi),
      no_effect(E, {"--ui-config"}, "JSON", "LLAMA_ARG_UI_CONFIG", kNoUi),
      no_effect(E, {"--webui-config-file"}, "PATH", "LLAMA_ARG_WEBUI_CONFIG_FILE", kNoUi),
      no_effect(E, {"--ui-config-file"}, "PATH", "LLAMA_ARG_UI_CONFIG_FILE", kNoUi),
      on_off_no_effect(E, {"--webui-mcp-proxy"}, {"--no-webui-mcp-proxy"}, "LLAMA_ARG_WEBUI_MCP_PROXY", kNoUi),
      on_off_no_effect(E, {"--ui-mcp-proxy"}, {"--no-ui-mcp-proxy"}, "LLAMA_ARG_UI_MCP_PROXY", kNoUi),
      no_effect(E, {"--tools"}, "TOOL1,TOOL2,...", "LLAMA_ARG_TOOLS", "there are no built-in agent tools"),
      no_effect(E, {"--rerank", "--reranking"}, "", "LLAMA_ARG_RERANKING", "there is no reranking endpoint"),
      no_effect(E, {"--cache-reuse"}, "N", "LLAMA_ARG_CACHE_REUSE",
                "slots reuse their longest common prefix; shifted chunks are not reused"),
      no_effect(E, {"--media-path"}, "PATH", "", kNoMultimodal),
      no_effect(E, {"--models-dir"}, "PATH", "LLAMA_ARG_MODELS_DIR", kOneModel),
      no_effect(E, {"--models-preset"}, "PATH", "LLAMA_ARG_MODELS_PRESET", kOneModel),
      no_effect(E, {"--models-max"}, "N", "LLAMA_ARG_MODELS_MAX", kOneModel),
      on_off_no_effect(E, {"--models-autoload"}, {"--no-models-autoload"}, "LLAMA_ARG_MODELS_AUTOLOAD", kOneModel),
      no_effect(E, {"-sps", "--slot-prompt-similarity"}, "SIMILARITY", "",
                "a request goes to the free slot with the longest cached prefix"),
      no_effect(E, {"--lora-init-without-apply"}, "", "", "LoRA adapters are not supported"),
      no_effect(E, {"-mv", "--model-vocoder"}, "FNAME", "", "there is no text-to-speech support"),
      no_effect(E, {"--tts-use-guide-tokens"}, "", "", "there is no text-to-speech support"),
  };
  return v;
}

// Speculative decoding (every spelling llama-server knows, one reason) and the model presets.
std::vector<FlagSpec> speculative_and_preset_specs() {
  std::vector<FlagSpec> v;
  const std::vector<std::pair<std::vector<std::string>, std::string>> spec = {
      {{"--spec-draft-hf", "-hfd", "-hfrd", "--hf-repo-draft"}, "<user>/<model>[:quant]"},
      {{"--spec-draft-threads", "-td", "--threads-draft"}, "N"},
      {{"--spec-draft-threads-batch", "-tbd", "--threads-batch-draft"}, "N"},
      {{"--spec-draft-cpu-mask", "-Cd", "--cpu-mask-draft"}, "M"},
      {{"--spec-draft-cpu-range", "-Crd", "--cpu-range-draft"}, "lo-hi"},
      {{"--spec-draft-cpu-strict", "--cpu-strict-draft"}, "<0|1>"},
      {{"--spec-draft-prio", "--prio-draft"}, "N"},
      {{"--spec-draft-poll", "--poll-draft"}, "<0|1>"},
      {{"--spec-draft-cpu-mask-batch", "-Cbd", "--cpu-mask-batch-draft"}, "M"},
      {{"--spec-draft-cpu-strict-batch", "--cpu-strict-batch-draft"}, "<0|1>"},
      {{"--spec-draft-prio-batch", "--prio-batch-draft"}, "N"},
      {{"--spec-draft-poll-batch", "--poll-batch-draft"}, "<0|1>"},
      {{"--spec-draft-override-tensor", "-otd", "--override-tensor-draft"}, "<tensor name pattern>=<buffer type>,..."},
      {{"--spec-draft-cpu-moe", "-cmoed", "--cpu-moe-draft"}, ""},
      {{"--spec-draft-n-cpu-moe", "--spec-draft-ncmoe", "-ncmoed", "--n-cpu-moe-draft"}, "N"},
      {{"--spec-draft-n-max"}, "N"},
      {{"--spec-draft-n-min"}, "N"},
      {{"--spec-draft-p-split", "--draft-p-split"}, "P"},
      {{"--spec-draft-p-min", "--draft-p-min"}, "P"},
      {{"--spec-draft-device", "-devd", "--device-draft"}, "<dev1,dev2,..>"},
      {{"--spec-draft-ngl", "-ngld", "--gpu-layers-draft", "--n-gpu-layers-draft"}, "N"},
      {{"--spec-draft-model", "-md", "--model-draft"}, "FNAME"},
      {{"--spec-type"}, "none,draft-simple,..."},
      {{"--spec-ngram-mod-n-min"}, "N"},
      {{"--spec-ngram-mod-n-max"}, "N"},
      {{"--spec-ngram-mod-n-match"}, "N"},
      {{"--spec-ngram-simple-size-n"}, "N"},
      {{"--spec-ngram-simple-size-m"}, "N"},
      {{"--spec-ngram-simple-min-hits"}, "N"},
      {{"--spec-ngram-map-k-size-n"}, "N"},
      {{"--spec-ngram-map-k-size-m"}, "N"},
      {{"--spec-ngram-map-k-min-hits"}, "N"},
      {{"--spec-ngram-map-k4v-size-n"}, "N"},
      {{"--spec-ngram-map-k4v-size-m"}, "N"},
      {{"--spec-ngram-map-k4v-min-hits"}, "N"},
      {{"--draft", "--draft-n", "--draft-max"}, "N"},
      {{"--draft-min", "--draft-n-min"}, "N"},
      {{"--spec-ngram-size-n"}, "N"},
      {{"--spec-ngram-size-m"}, "N"},
      {{"--spec-ngram-min-hits"}, "N"},
  };
  static const std::map<std::string, std::string> kEnv = {
      {"--spec-draft-hf", "LLAMA_ARG_SPEC_DRAFT_HF_REPO"},   {"--spec-draft-cpu-moe", "LLAMA_ARG_SPEC_DRAFT_CPU_MOE"},
      {"--spec-draft-n-cpu-moe", "LLAMA_ARG_SPEC_DRAFT_N_CPU_MOE"}, {"--spec-draft-n-max", "LLAMA_ARG_SPEC_DRAFT_N_MAX"},
      {"--spec-draft-n-min", "LLAMA_ARG_SPEC_DRAFT_N_MIN"},  {"--spec-draft-p-split", "LLAMA_ARG_SPEC_DRAFT_P_SPLIT"},
      {"--spec-draft-p-min", "LLAMA_ARG_SPEC_DRAFT_P_MIN"},  {"--spec-draft-ngl", "LLAMA_ARG_N_GPU_LAYERS_DRAFT"},
      {"--spec-draft-model", "LLAMA_ARG_SPEC_DRAFT_MODEL"},  {"--spec-type", "LLAMA_ARG_SPEC_TYPE"},
      {"--draft", "LLAMA_ARG_DRAFT_MAX"},                    {"--draft-min", "LLAMA_ARG_DRAFT_MIN"},
  };
  for (const auto& [names, value] : spec) {
    const auto env = kEnv.find(names.front());
    v.push_back(no_effect(E, names, value, env == kEnv.end() ? "" : env->second, kNoDraft));
  }
  v.push_back(on_off_no_effect(E, {"--spec-draft-backend-sampling"}, {"--no-spec-draft-backend-sampling"},
                               "LLAMA_ARG_SPEC_DRAFT_BACKEND_SAMPLING", kNoDraft));
  for (const char* preset : {"--embd-gemma-default", "--fim-qwen-1.5b-default", "--fim-qwen-3b-default",
                             "--fim-qwen-7b-default", "--fim-qwen-7b-spec", "--fim-qwen-14b-spec",
                             "--fim-qwen-30b-default", "--gpt-oss-20b-default", "--gpt-oss-120b-default",
                             "--vision-gemma-4b-default", "--vision-gemma-12b-default", "--spec-default"})
    v.push_back(no_effect(E, {preset}, "", "", kNoPreset));
  return v;
}

// "8GiB", "512MiB", "64M" (binary), "2GB" (decimal), or plain bytes.
size_t to_bytes(const std::string& flag, const std::string& v) {
  errno = 0;
  char* end = nullptr;
  const double x = std::strtod(v.c_str(), &end);
  std::string unit(end ? end : "");
  for (char& c : unit) c = (char)std::tolower((unsigned char)c);
  double scale = -1;
  const char* units[] = {"", "k", "m", "g", "t"};
  for (int i = 0; i < 5; ++i) {
    const std::string u = units[i];
    const double bin = std::pow(1024.0, i), dec = std::pow(1000.0, i);
    if (unit == u || unit == u + "ib" || (i == 0 && unit == "b")) scale = bin;
    else if (i > 0 && unit == u + "b") scale = dec;
  }
  if (v.empty() || end == v.c_str() || errno || scale < 0 || !(x > 0) || x * scale > 1e15)
    throw Error(flag + ": expected a size such as 8GiB or 512MiB, got '" + v + "'");
  return (size_t)(x * scale);
}

}  // namespace

std::vector<FlagSpec> server_flag_specs(server::ServerSettings& ss, RunSettings& s) {
  std::vector<FlagSpec> v = {
      flag(E, {"--path"}, "PATH", "LLAMA_ARG_STATIC_PATH", "serve the files of PATH at / instead of the built-in chat page",
           [&ss](const std::string& x) { ss.webui_path = x; }),
      on_off(E, {"--webui"}, {"--no-webui"}, "LLAMA_ARG_WEBUI", "the chat page at / (default: on)",
             [&ss](bool on) { ss.webui = on; }),
      on_off(E, {"--ui"}, {"--no-ui"}, "LLAMA_ARG_UI", "the chat page at / (default: on)",
             [&ss](bool on) { ss.webui = on; }),
      on_off(E, {"-kvu", "--kv-unified"}, {"-no-kvu", "--no-kv-unified"}, "LLAMA_ARG_KV_UNIFIED",
             "one KV pool of -c positions shared by all slots, any one conversation may grow to min(model "
             "context, -c) (default: on unless -np N is given, as llama-server); off: each slot -c / -np",
             [&ss](bool on) {
               ss.kv_unified = on;
               ss.kv_unified_given = true;
             }),
      flag(E, {"--kv-memory"}, "SIZE", "", "size the KV pool by memory (e.g. 8GiB, 512MiB) instead of by -c",
           [&ss](const std::string& x) { ss.kv_memory_bytes = to_bytes("--kv-memory", x); }),
      flag(E, {"-cram", "--cache-ram"}, "N", "LLAMA_ARG_CACHE_RAM",
           "prompt cache in host memory shared by the slots, in MiB (default: 8192, -1: no limit, 0: off)",
           [&ss](const std::string& x) { ss.cache_ram_mib = int_in("--cache-ram", x, -1, 1 << 30); }),
      on_off(E, {"--context-shift"}, {"--no-context-shift"}, "LLAMA_ARG_CONTEXT_SHIFT",
             "context shift on endless generation: a full context drops half of what follows the kept prompt (request n_keep / n_discard) and goes on (default: off: it ends with finish_reason length)",
             [&ss](bool on) { ss.context_shift = on; }),
      flag(E, {"-np", "--parallel"}, "N", "LLAMA_ARG_N_PARALLEL",
           "slots decoding together (default 4; -1: 4)",
           [&ss](const std::string& x) {
             const int n = int_in("-np", x, -1, 256);
             if (n == 0) throw Error("-np: expected 1 to 256 slots, or -1 (auto: 4), got 0");
             ss.n_parallel = n < 0 ? 4 : n;
             ss.n_parallel_given = n > 0;
           }),
      flag(E, {"-a", "--alias"}, "STRING", "LLAMA_ARG_ALIAS", "model name reported by the API",
           [&ss](const std::string& x) { ss.alias = x; }),
      flag(E, {"--tags"}, "STRING", "LLAMA_ARG_TAGS", "model tags, comma-separated (listed in /v1/models)",
           [&ss](const std::string& x) { ss.tags = split_list(x); }),
      flag(E, {"--host"}, "HOST", "LLAMA_ARG_HOST", "listen address (default 127.0.0.1)",
           [&ss](const std::string& x) {
             if (x.size() > 5 && x.compare(x.size() - 5, 5, ".sock") == 0)
               throw Error("--host " + x + ": listening on a UNIX socket is not supported; give an IP address");
             ss.host = x;
           }),
      flag(E, {"--port"}, "PORT", "LLAMA_ARG_PORT", "listen port (default 8080; 0: any free port, printed at start)",
           [&ss](const std::string& x) { ss.port = int_in("--port", x, 0, 65535); }),
      flag(E, {"--api-key"}, "KEY", "LLAMA_API_KEY",
           "require a key (Authorization: Bearer KEY) on every endpoint but /health; several: comma-separated",
           [&ss](const std::string& x) {
             for (auto& k : split_list(x)) ss.api_keys.push_back(k);
           }),
      flag(E, {"--api-key-file"}, "FNAME", "LLAMA_ARG_API_KEY_FILE", "API keys, one per line",
           [&ss](const std::string& x) { add_key_file(ss.api_keys, x); }),
      flag(E, {"--ssl-key-file"}, "FNAME", "LLAMA_ARG_SSL_KEY_FILE", "PEM private key: serve HTTPS (with --ssl-cert-file)",
           [&ss](const std::string& x) { ss.ssl_key_file = x; }),
      flag(E, {"--ssl-cert-file"}, "FNAME", "LLAMA_ARG_SSL_CERT_FILE", "PEM certificate: serve HTTPS (with --ssl-key-file)",
           [&ss](const std::string& x) { ss.ssl_cert_file = x; }),
      flag(E, {"-to", "--timeout"}, "N", "LLAMA_ARG_TIMEOUT", "generation timeout: the longest a response may take to write, and the drain limit at shutdown, in seconds (default 600)",
           [&ss](const std::string& x) { ss.timeout_s = int_in("--timeout", x, 1, 1 << 30); }),
      flag(E, {"--threads-http"}, "N", "LLAMA_ARG_THREADS_HTTP", "HTTP worker threads (default: enough for the slots)",
           [&ss](const std::string& x) { ss.threads_http = int_in("--threads-http", x, -1, 1024); }),
      on_off(E, {"--cache-prompt"}, {"--no-cache-prompt"}, "LLAMA_ARG_CACHE_PROMPT",
             "reuse a slot's cached prompt prefix (default: on; the default of requests' cache_prompt)",
             [&s](bool on) { s.cache_prompt = on; }),
      flag(E, {"--metrics"}, "", "LLAMA_ARG_ENDPOINT_METRICS", "enable GET /metrics (Prometheus)",
           [&ss](const std::string&) { ss.metrics = true; }),
      flag(E, {"--props"}, "", "LLAMA_ARG_ENDPOINT_PROPS", "enable POST /props", [&ss](const std::string&) {
        ss.props_endpoint = true;
      }),
      on_off(E, {"--slots"}, {"--no-slots"}, "LLAMA_ARG_ENDPOINT_SLOTS", "GET /slots (default: on)",
             [&ss](bool on) { ss.slots_endpoint = on; }),
      flag(E, {"--slot-save-path"}, "PATH", "", "folder for POST /slots/{id}?action=save|restore",
           [&ss](const std::string& x) { ss.slot_save_path = x; }),
      on_off(E, {"--skip-chat-parsing"}, {"--no-skip-chat-parsing"}, "LLAMA_ARG_SKIP_CHAT_PARSING",
             "leave reasoning and tool calls in the content (default: parsed)",
             [&ss](bool on) { ss.skip_chat_parsing = on; }),
      on_off(E, {"--prefill-assistant"}, {"--no-prefill-assistant"}, "LLAMA_ARG_PREFILL_ASSISTANT",
             "continue a final assistant message (default: on); off: it is a finished turn",
             [&ss](bool on) { ss.prefill_assistant = on; }),
      flag(E, {"--sleep-idle-seconds"}, "SECONDS", "",
           "after this many seconds without requests, drop cached conversations and give the weights' and KV "
           "cache's memory back until the next request (default: -1, never)",
           [&ss](const std::string& x) {
             ss.sleep_idle_seconds = int_in("--sleep-idle-seconds", x, -1, 1 << 30);
             if (ss.sleep_idle_seconds == 0) throw Error("--sleep-idle-seconds: cannot be 0 (-1: never)");
           }),
      flag(E, {"--embedding", "--embeddings"}, "", "LLAMA_ARG_EMBEDDINGS",
           "serve /v1/embeddings, /embedding, /embeddings", [&ss](const std::string&) { ss.embeddings = true; }),
      flag(E, {"--pooling"}, "{none,mean,cls,last,rank}", "LLAMA_ARG_POOLING",
           "pooling of embeddings (default: the GGUF's, else last)", [&ss](const std::string& x) {
             if (x != "none" && x != "mean" && x != "cls" && x != "last" && x != "rank")
               throw Error("--pooling: expected none, mean, cls, last or rank, got '" + x + "'");
             ss.pooling = x;
           }),
      flag(E, {"--spm-infill"}, "", "", "/infill puts the suffix before the prefix (some models prefer it)",
           [&ss](const std::string&) { ss.spm_infill = true; }),
      flag(E, {"--read-timeout"}, "N", "",
           "seconds a client has to send a request's head and body (plus 1 s per MiB of body); slower or idle "
           "connections are closed (default 10)",
           [&ss](const std::string& x) { ss.read_timeout_s = int_in("--read-timeout", x, 1, 3600); }),
      flag(E, {"--max-body-bytes"}, "N", "", "request body limit (default 16 MiB)",
           [&ss](const std::string& x) { ss.max_body_bytes = (size_t)int_in("--max-body-bytes", x, 1024, 1 << 30); }),
  };
  v.back().group = FlagGroup::Oscar;
  for (auto more : {unsupported_server_specs(), speculative_and_preset_specs()})
    v.insert(v.end(), std::make_move_iterator(more.begin()), std::make_move_iterator(more.end()));
  return v;
}

bool ServerFlags::handle(const std::string&, const std::function<std::string()>&) {
  // Flags outside the table would be handled here (one `if` each). None yet.
  return false;
}

namespace {

std::vector<FlagSpec> all_server_specs(server::ServerSettings& ss, RunSettings& s, ServerFlags* extra) {
  std::vector<FlagSpec> specs = common_flag_specs(s);
  for (auto part : {sampling_flag_specs(s), chat_flag_specs(s), server_flag_specs(ss, s),
                    kv_flag_specs(s)})
    specs.insert(specs.end(), std::make_move_iterator(part.begin()), std::make_move_iterator(part.end()));
  return specs;
}

}  // namespace

ServerArgs parse_server_args(int argc, char** argv, const EnvLookup& env) {
  // The table and the untabled hook fill the same settings.
  ServerFlags extra;
  ServerArgs a;
  apply_kv_env(a.run, env);
  const std::vector<FlagSpec> specs = all_server_specs(extra.settings, a.run, &extra);
  const FlagParseResult r = parse_flags(specs, argc, argv, env, [&extra](const std::string& f, const auto& next) {
    return extra.handle(f, next);
  });
  a.run.flag_notes.insert(a.run.flag_notes.end(), r.notes.begin(), r.notes.end());
  check_run_settings(a.run);
  a.server = extra.settings;
  if (a.server.ssl_key_file.empty() != a.server.ssl_cert_file.empty())
    throw Error("--ssl-key-file and --ssl-cert-file go together; give both");
  a.server.reasoning_format = a.run.reasoning_format;
  a.server.n_batch = a.run.n_batch;
  a.server.verbose = a.run.verbose;
  a.server.seed_given = a.run.seed_given;
  a.server.default_template_kwargs = default_template_kwargs(a.run);
  // As llama-server: slots share one KV pool unless -np N is given without --kv-unified.
  if (!a.server.kv_unified_given && a.server.n_parallel_given) a.server.kv_unified = false;
  return a;
}

std::string server_usage() {
  server::ServerSettings ss;
  RunSettings s;
  return flags_help(all_server_specs(ss, s, nullptr));
}

}  // namespace oscar::tools
