// llama.cpp's common flags (the first group of llama-server --help) bound to
// RunSettings. Flags for hardware this engine does not have (GPUs, NUMA
// placement, thread pinning) or features it lacks (LoRA, RoPE overrides) are
// accepted with a reason, so launch scripts written for llama-server run.
#include <fstream>
#include <sstream>

#include "core/error.h"
#include "kv/kv_cache.h"
#include "llama_flags.h"

namespace oscar::tools {

FlagSpec flag(FlagGroup g, std::vector<std::string> names, std::string value, std::string env, std::string help,
              std::function<void(const std::string&)> apply) {
  FlagSpec f;
  f.group = g;
  f.names = std::move(names);
  f.value = std::move(value);
  f.env = std::move(env);
  f.help = std::move(help);
  f.apply = std::move(apply);
  return f;
}

FlagSpec no_effect(FlagGroup g, std::vector<std::string> names, std::string value, std::string env,
                   std::string reason) {
  FlagSpec f = flag(g, std::move(names), std::move(value), std::move(env), "", nullptr);
  f.no_effect = std::move(reason);
  return f;
}

FlagSpec on_off(FlagGroup g, std::vector<std::string> on, std::vector<std::string> off, std::string env,
                std::string help, std::function<void(bool)> apply) {
  FlagSpec f = flag(g, std::move(on), "", std::move(env), std::move(help),
                    [apply](const std::string& v) { apply(v == "1"); });
  f.negations = std::move(off);
  return f;
}

FlagSpec on_off_no_effect(FlagGroup g, std::vector<std::string> on, std::vector<std::string> off, std::string env,
                          std::string reason) {
  FlagSpec f = no_effect(g, std::move(on), "", std::move(env), std::move(reason));
  f.negations = std::move(off);
  return f;
}

namespace {

constexpr FlagGroup C = FlagGroup::Common;
const char* const kCpuOnly = "this engine runs on the CPU; there is no GPU or other device to offload to";
const char* const kOnePool = "one thread pool (-t) serves both prompt processing and generation";
const char* const kNoPinning = "threads are scheduled by the OS; CPU masks, priorities and polling are not set";
const char* const kRope = "RoPE and YaRN parameters are read from the model file and cannot be overridden";
const char* const kNoAdapters = "LoRA adapters and control vectors are not supported";
const char* const kLogs = "logs go to stderr in one fixed format; -v turns on debug lines";
const char* const kNoDraft = "speculative decoding (draft models) is not implemented";

std::string read_text_file(const std::string& flag, const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  if (!f) throw Error(flag + ": cannot read '" + path + "'");
  std::stringstream ss;
  ss << f.rdbuf();
  return ss.str();
}

}  // namespace

namespace {

// The informational actions, threads, context, batches, the cache, and the
// hardware placement flags (no effect on a CPU engine).
std::vector<FlagSpec> runtime_specs(RunSettings& s) {
  auto action = [&s](const char* name) { return [&s, name](const std::string&) { s.action = name; }; };
  auto ival = [](int& dst, const char* f) { return [&dst, f](const std::string& v) { dst = flag_int(f, v); }; };
  return {
      flag(C, {"-h", "--help", "--usage"}, "", "", "print this help and exit", nullptr),
      flag(C, {"--version"}, "", "", "print the version and exit", action("version")),
      flag(C, {"--license"}, "", "", "print the license of oscar.cpp and its dependencies and exit", action("license")),
      flag(C, {"-cl", "--cache-list"}, "", "", "list the models in the download cache and exit", action("cache-list")),
      flag(C, {"--completion-bash"}, "", "", "print a bash completion script for this tool and exit",
           action("completion-bash")),
      flag(C, {"-t", "--threads"}, "N", "LLAMA_ARG_THREADS", "CPU threads (default: all; -1: all)",
           [&s](const std::string& v) { s.n_threads = std::max(0, flag_int("-t", v)); }),
      no_effect(C, {"-tb", "--threads-batch"}, "N", "", kOnePool),
      no_effect(C, {"-C", "--cpu-mask"}, "M", "", kNoPinning),
      no_effect(C, {"-Cr", "--cpu-range"}, "lo-hi", "", kNoPinning),
      no_effect(C, {"--cpu-strict"}, "<0|1>", "", kNoPinning),
      no_effect(C, {"--prio"}, "N", "", kNoPinning),
      no_effect(C, {"--poll"}, "<0...100>", "", kNoPinning),
      no_effect(C, {"-Cb", "--cpu-mask-batch"}, "M", "", kNoPinning),
      no_effect(C, {"-Crb", "--cpu-range-batch"}, "lo-hi", "", kNoPinning),
      no_effect(C, {"--cpu-strict-batch"}, "<0|1>", "", kNoPinning),
      no_effect(C, {"--prio-batch"}, "N", "", kNoPinning),
      no_effect(C, {"--poll-batch"}, "<0|1>", "", kNoPinning),
      flag(C, {"-c", "--ctx-size"}, "N", "LLAMA_ARG_CTX_SIZE", "context size (0: the model's training context)",
           ival(s.n_ctx, "-c")),
      flag(C, {"-n", "--predict", "--n-predict"}, "N", "LLAMA_ARG_N_PREDICT",
           "tokens to generate, the default of requests (-1: until end of generation)", ival(s.n_predict, "-n")),
      flag(C, {"-b", "--batch-size"}, "N", "LLAMA_ARG_BATCH", "logical batch size (default: 2048)",
           ival(s.n_batch, "-b")),
      flag(C, {"-ub", "--ubatch-size"}, "N", "LLAMA_ARG_UBATCH", "physical batch: tokens per forward call (default: 512)",
           ival(s.n_ubatch, "-ub")),
      no_effect(C, {"--keep"}, "N", "", "the context is not shifted, so no prompt tokens need keeping"),
      no_effect(C, {"--swa-full"}, "", "LLAMA_ARG_SWA_FULL",
                "sliding-window layers keep a ring of window + slack positions (see --kv-swa-slack)"),
      flag(C, {"-fa", "--flash-attn"}, "[on|off|auto]", "LLAMA_ARG_FLASH_ATTN",
           "fused attention (on, off or auto; the CPU path is always fused-capable)",
           [&s](const std::string& v) {
             if (v != "on" && v != "off" && v != "auto") throw Error("-fa: expected on, off or auto, got '" + v + "'");
             s.flash_attn = v;
           }),
      on_off_no_effect(C, {"--perf"}, {"--no-perf"}, "LLAMA_ARG_PERF",
                       "timings are always measured (the server reports them per request)"),
      on_off_no_effect(C, {"-e", "--escape"}, {"--no-escape"}, "", "prompts are taken as given, without escapes"),
      no_effect(C, {"--rope-scaling"}, "{none,linear,yarn}", "LLAMA_ARG_ROPE_SCALING_TYPE", kRope),
      no_effect(C, {"--rope-scale"}, "N", "LLAMA_ARG_ROPE_SCALE", kRope),
      no_effect(C, {"--rope-freq-base"}, "N", "LLAMA_ARG_ROPE_FREQ_BASE", kRope),
      no_effect(C, {"--rope-freq-scale"}, "N", "LLAMA_ARG_ROPE_FREQ_SCALE", kRope),
      no_effect(C, {"--yarn-orig-ctx"}, "N", "LLAMA_ARG_YARN_ORIG_CTX", kRope),
      no_effect(C, {"--yarn-ext-factor"}, "N", "LLAMA_ARG_YARN_EXT_FACTOR", kRope),
      no_effect(C, {"--yarn-attn-factor"}, "N", "LLAMA_ARG_YARN_ATTN_FACTOR", kRope),
      no_effect(C, {"--yarn-beta-slow"}, "N", "LLAMA_ARG_YARN_BETA_SLOW", kRope),
      no_effect(C, {"--yarn-beta-fast"}, "N", "LLAMA_ARG_YARN_BETA_FAST", kRope),
      on_off_no_effect(C, {"-kvo", "--kv-offload"}, {"-nkvo", "--no-kv-offload"}, "LLAMA_ARG_KV_OFFLOAD", kCpuOnly),
      on_off_no_effect(C, {"--repack"}, {"-nr", "--no-repack"}, "LLAMA_ARG_REPACK",
                       "weights are always laid out for the CPU kernels at load"),
      no_effect(C, {"--no-host"}, "", "LLAMA_ARG_NO_HOST", kCpuOnly),
      flag(C, {"-ctk", "--cache-type-k"}, "TYPE", "LLAMA_ARG_CACHE_TYPE_K",
           "K cache type: f32 f16 bf16 q8_0 q4_0 q2_0 (default: f16)",
           [&s](const std::string& v) { s.cache_k = kv::parse_cache_type(v); }),
      flag(C, {"-ctv", "--cache-type-v"}, "TYPE", "LLAMA_ARG_CACHE_TYPE_V", "V cache type (as -ctk)",
           [&s](const std::string& v) { s.cache_v = kv::parse_cache_type(v); }),
      no_effect(C, {"-dt", "--defrag-thold"}, "N", "LLAMA_ARG_DEFRAG_THOLD",
                "each slot owns its own cache region, which never fragments"),
      no_effect(C, {"--mlock"}, "", "LLAMA_ARG_MLOCK", "the weights are not locked in RAM"),
      on_off(C, {"--mmap"}, {"--no-mmap"}, "LLAMA_ARG_MMAP",
             "map the model file instead of reading it into memory (default: read; with huge pages decode\n"
             "streams the weights faster)",
             [&s](bool on) { s.use_mmap = on; }),
      on_off_no_effect(C, {"-dio", "--direct-io"}, {"-ndio", "--no-direct-io"}, "LLAMA_ARG_DIO",
                       "the model is read (or mapped) through the page cache"),
      no_effect(C, {"--numa"}, "TYPE", "LLAMA_ARG_NUMA", kNoPinning),
      no_effect(C, {"-dev", "--device"}, "<dev1,dev2,..>", "LLAMA_ARG_DEVICE", kCpuOnly),
      flag(C, {"--list-devices"}, "", "", "list the devices (the CPU only) and exit", action("list-devices")),
      no_effect(C, {"-ot", "--override-tensor"}, "<tensor name pattern>=<buffer type>,...", "LLAMA_ARG_OVERRIDE_TENSOR",
                kCpuOnly),
      no_effect(C, {"-cmoe", "--cpu-moe"}, "", "LLAMA_ARG_CPU_MOE", kCpuOnly),
      no_effect(C, {"-ncmoe", "--n-cpu-moe"}, "N", "LLAMA_ARG_N_CPU_MOE", kCpuOnly),
      no_effect(C, {"-ngl", "--gpu-layers", "--n-gpu-layers"}, "N", "LLAMA_ARG_N_GPU_LAYERS", kCpuOnly),
      no_effect(C, {"-sm", "--split-mode"}, "{none,layer,row,tensor}", "LLAMA_ARG_SPLIT_MODE", kCpuOnly),
      no_effect(C, {"-ts", "--tensor-split"}, "N0,N1,N2,...", "LLAMA_ARG_TENSOR_SPLIT", kCpuOnly),
      no_effect(C, {"-mg", "--main-gpu"}, "INDEX", "LLAMA_ARG_MAIN_GPU", kCpuOnly),
      no_effect(C, {"-fit", "--fit"}, "[on|off]", "LLAMA_ARG_FIT", kCpuOnly),
      no_effect(C, {"-fitt", "--fit-target"}, "MiB0,MiB1,MiB2,...", "LLAMA_ARG_FIT_TARGET", kCpuOnly),
      no_effect(C, {"-fitc", "--fit-ctx"}, "N", "LLAMA_ARG_FIT_CTX", kCpuOnly),
      no_effect(C, {"--check-tensors"}, "", "", "tensor shapes and types are checked at load; values are not scanned"),
      no_effect(C, {"--override-kv"}, "KEY=TYPE:VALUE,...", "", "model metadata is used as stored in the file"),
      on_off_no_effect(C, {"--op-offload"}, {"--no-op-offload"}, "", kCpuOnly),
      no_effect(C, {"--lora"}, "FNAME", "", kNoAdapters),
      no_effect(C, {"--lora-scaled"}, "FNAME:SCALE,...", "", kNoAdapters),
      no_effect(C, {"--control-vector"}, "FNAME", "", kNoAdapters),
      no_effect(C, {"--control-vector-scaled"}, "FNAME:SCALE,...", "", kNoAdapters),
      [] {
        FlagSpec f = no_effect(C, {"--control-vector-layer-range"}, "START END", "", kNoAdapters);
        f.n_values = 2;
        return f;
      }(),
  };
}

// The model, where it comes from, and logging.
std::vector<FlagSpec> model_and_log_specs(RunSettings& s) {
  return {
      flag(C, {"-m", "--model"}, "FNAME", "LLAMA_ARG_MODEL", "GGUF model file (default: " + default_model() + ")",
           [&s](const std::string& v) { s.model = v; }),
      flag(C, {"-mu", "--model-url"}, "MODEL_URL", "LLAMA_ARG_MODEL_URL",
           "download the model from this URL into the cache (LLAMA_CACHE, default ~/.cache/llama.cpp)",
           [&s](const std::string& v) { s.model_url = v; }),
      no_effect(C, {"-dr", "--docker-repo"}, "[<repo>/]<model>[:quant]", "LLAMA_ARG_DOCKER_REPO",
                "models are not pulled from Docker Hub; use -hf or -mu"),
      flag(C, {"-hf", "-hfr", "--hf-repo"}, "<user>/<model>[:quant]", "LLAMA_ARG_HF_REPO",
           "download the model from a Hugging Face repository (quant: default Q4_K_M, then Q8_0, then the\n"
           "first GGUF) into the Hugging Face cache layout (LLAMA_CACHE, HF_HUB_CACHE, HF_HOME/hub or\n"
           "~/.cache/huggingface/hub); MODEL_ENDPOINT or HF_ENDPOINT changes the server",
           [&s](const std::string& v) { s.hf_repo = v; }),
      flag(C, {"-hff", "--hf-file"}, "FILE", "LLAMA_ARG_HF_FILE", "the file of the -hf repository (overrides the quant)",
           [&s](const std::string& v) { s.hf_file = v; }),
      no_effect(C, {"-hfv", "-hfrv", "--hf-repo-v"}, "<user>/<model>[:quant]", "LLAMA_ARG_HF_REPO_V",
                "there is no vocoder (text-to-speech) support"),
      no_effect(C, {"-hffv", "--hf-file-v"}, "FILE", "LLAMA_ARG_HF_FILE_V", "there is no vocoder (text-to-speech) support"),
      flag(C, {"-hft", "--hf-token"}, "TOKEN", "HF_TOKEN", "Hugging Face access token for -hf downloads",
           [&s](const std::string& v) { s.hf_token = v; }),
      no_effect(C, {"--log-disable"}, "", "", kLogs),
      no_effect(C, {"--log-file"}, "FNAME", "LLAMA_ARG_LOG_FILE", kLogs),
      no_effect(C, {"--log-colors"}, "[on|off|auto]", "LLAMA_ARG_LOG_COLORS", kLogs),
      flag(C, {"-v", "--verbose", "--log-verbose"}, "", "", "debug logging (the server also adds __verbose to responses)",
           [&s](const std::string&) { s.verbose = true; }),
      flag(C, {"--offline"}, "", "LLAMA_ARG_OFFLINE",
           "use only the download cache: -hf and -mu never touch the network",
           [&s](const std::string&) { s.offline = true; }),
      flag(C, {"-lv", "--verbosity", "--log-verbosity"}, "N", "LLAMA_ARG_LOG_VERBOSITY",
           "log threshold: 5 or more also logs debug lines (as -v)",
           [&s](const std::string& v) {
             if (flag_int("-lv", v) >= 5) s.verbose = true;
           }),
      on_off_no_effect(C, {"--log-prefix"}, {"--no-log-prefix"}, "LLAMA_ARG_LOG_PREFIX", kLogs),
      on_off_no_effect(C, {"--log-timestamps"}, {"--no-log-timestamps"}, "LLAMA_ARG_LOG_TIMESTAMPS", kLogs),
      no_effect(C, {"--spec-draft-type-k", "-ctkd", "--cache-type-k-draft"}, "TYPE", "LLAMA_ARG_SPEC_DRAFT_CACHE_TYPE_K",
                kNoDraft),
      no_effect(C, {"--spec-draft-type-v", "-ctvd", "--cache-type-v-draft"}, "TYPE", "LLAMA_ARG_SPEC_DRAFT_CACHE_TYPE_V",
                kNoDraft),
  };
}

}  // namespace

std::vector<FlagSpec> common_flag_specs(RunSettings& s) {
  std::vector<FlagSpec> specs = runtime_specs(s);
  auto more = model_and_log_specs(s);
  specs.insert(specs.end(), std::make_move_iterator(more.begin()), std::make_move_iterator(more.end()));
  return specs;
}

std::vector<FlagSpec> cli_flag_specs(RunSettings& s) {
  constexpr FlagGroup E = FlagGroup::Example;
  return {
      flag(E, {"-p", "--prompt"}, "TEXT", "", "prompt", [&s](const std::string& v) { s.prompt = v; }),
      flag(E, {"-f", "--file"}, "FNAME", "", "prompt from a file",
           [&s](const std::string& v) {
             s.prompt_file = v;
             s.prompt = read_text_file("-f", v);
           }),
      flag(E, {"--verbose-prompt"}, "", "", "print the prompt's tokens before generating",
           [&s](const std::string&) { s.verbose_prompt = true; }),
      flag(E, {"-cnv", "--conversation"}, "", "", "conversation mode (default: on when the model has a chat template\n"
                                                  "and no -p/-f is given)",
           [&s](const std::string&) { s.conversation = true; }),
      flag(E, {"-no-cnv", "--no-conversation"}, "", "", "no conversation mode",
           [&s](const std::string&) { s.no_cnv = true; }),
      flag(E, {"-sys", "--system-prompt"}, "PROMPT", "", "system message of the conversation",
           [&s](const std::string& v) { s.system_prompt = v; }),
      flag(E, {"--dump-logits"}, "FNAME", "", "write the logits of each step to a file",
           [&s](const std::string& v) { s.dump_logits = v; }),
  };
}

std::vector<FlagSpec> kv_flag_specs(RunSettings& s) {
  // The --kv-* flags keep one parser (parse_kv_flag, shared with oscar-bench);
  // the table only lists them.
  auto via_kv = [&s](const char* name) {
    return [&s, name](const std::string& v) { parse_kv_flag(s, name, [&v] { return v; }); };
  };
  constexpr FlagGroup O = FlagGroup::Oscar;
  return {
      flag(O, {"--kv-hp-sink"}, "N", "", "f16 sink tokens of a quantized cache (LLAMA_KV_HP_SINK; q2_0: 512)",
           via_kv("--kv-hp-sink")),
      flag(O, {"--kv-hp-recent"}, "N", "", "f16 recent tokens (LLAMA_KV_HP_RECENT; q2_0: 2048)", via_kv("--kv-hp-recent")),
      flag(O, {"--kv-clip-k"}, "F", "", "q2_0 K clip ratio (LLAMA_KV_CLIP_RATIO sets both; 0.96; 0: off)",
           via_kv("--kv-clip-k")),
      flag(O, {"--kv-clip-v"}, "F", "", "q2_0 V clip ratio (0.92)", via_kv("--kv-clip-v")),
      flag(O, {"--kv-group-size"}, "N", "", "q2_0 group size (default: the head dim)", via_kv("--kv-group-size")),
      flag(O, {"--kv-no-hadamard"}, "", "", "no data-free Hadamard without rotations (LLAMA_KV_NO_HADAMARD=1)",
           [&s](const std::string&) { s.kv_no_hadamard = true; }),
      flag(O, {"--kv-fused-fa"}, "0|1", "", "0: reference attention path (LLAMA_KV_FUSED_FA)", via_kv("--kv-fused-fa")),
      flag(O, {"--kv-swa-type-k"}, "T", "", "K type of sliding-window layers (default: f16, or the main type when it\n"
                                           "is a float type)",
           via_kv("--kv-swa-type-k")),
      flag(O, {"--kv-swa-type-v"}, "T", "", "V type of sliding-window layers", via_kv("--kv-swa-type-v")),
      flag(O, {"--kv-swa-slack"}, "N", "", "ring positions kept beyond the window (default 512)", via_kv("--kv-swa-slack")),
  };
}

}  // namespace oscar::tools
