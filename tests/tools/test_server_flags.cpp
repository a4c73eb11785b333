// oscar-server's flags against llama-server's documented table: every flag
// of its README is accepted (by spelling and by LLAMA_ARG_* variable), --help
// lists each one, unknown flags name the nearest known one, variables apply
// with flags beating them, no-effect flags say so in one line, and the flags
// that work land in the settings the server runs with.
#include <gtest/gtest.h>

#include <cmath>
#include <map>
#include <string>
#include <vector>

#include "chat_setup.h"
#include "common/tmp_dir.h"
#include "core/error.h"
#include "server_flags.h"

namespace oscar::tools {
namespace {

using Env = std::map<std::string, std::string>;

ServerArgs parse(std::vector<std::string> args, const Env& env = {}) {
  args.insert(args.begin(), "oscar-server");
  std::vector<char*> argv;
  for (auto& a : args) argv.push_back(a.data());
  argv.push_back(nullptr);
  EnvLookup lookup = [env](const char* name) -> const char* {
    auto it = env.find(name);
    return it == env.end() ? nullptr : it->second.c_str();
  };
  return parse_server_args((int)args.size(), argv.data(), lookup);
}

struct ReadmeFlag {
  std::vector<std::string> names;
  bool takes_value;
  std::string env;
};

const std::vector<ReadmeFlag> kReadmeFlags = {
// llama-server's flags as its README lists them: spellings, whether a value follows, the variable.
    {{"-t", "--threads"}, true, "LLAMA_ARG_THREADS"},
    {{"-tb", "--threads-batch"}, true, ""},
    {{"-C", "--cpu-mask"}, true, ""},
    {{"-Cr", "--cpu-range"}, true, ""},
    {{"--cpu-strict"}, true, "1> |"},
    {{"--prio"}, true, ""},
    {{"--poll"}, true, ""},
    {{"-Cb", "--cpu-mask-batch"}, true, ""},
    {{"-Crb", "--cpu-range-batch"}, true, ""},
    {{"--cpu-strict-batch"}, true, "1> |"},
    {{"--prio-batch"}, true, ""},
    {{"--poll-batch"}, true, "1> |"},
    {{"-c", "--ctx-size"}, true, "LLAMA_ARG_CTX_SIZE"},
    {{"-n", "--predict", "--n-predict"}, true, "LLAMA_ARG_N_PREDICT"},
    {{"-b", "--batch-size"}, true, "LLAMA_ARG_BATCH"},
    {{"-ub", "--ubatch-size"}, true, "LLAMA_ARG_UBATCH"},
    {{"--keep"}, true, ""},
    {{"--swa-full"}, false, "LLAMA_ARG_SWA_FULL"},
    {{"-fa", "--flash-attn"}, true, "off|auto] | LLAMA_ARG_FLASH_ATTN"},
    {{"--perf", "--no-perf"}, false, "LLAMA_ARG_PERF"},
    {{"-e", "--escape", "--no-escape"}, false, ""},
    {{"--rope-scaling"}, true, "LLAMA_ARG_ROPE_SCALING_TYPE"},
    {{"--rope-scale"}, true, "LLAMA_ARG_ROPE_SCALE"},
    {{"--rope-freq-base"}, true, "LLAMA_ARG_ROPE_FREQ_BASE"},
    {{"--rope-freq-scale"}, true, "LLAMA_ARG_ROPE_FREQ_SCALE"},
    {{"--yarn-orig-ctx"}, true, "LLAMA_ARG_YARN_ORIG_CTX"},
    {{"--yarn-ext-factor"}, true, "LLAMA_ARG_YARN_EXT_FACTOR"},
    {{"--yarn-attn-factor"}, true, "LLAMA_ARG_YARN_ATTN_FACTOR"},
    {{"--yarn-beta-slow"}, true, "LLAMA_ARG_YARN_BETA_SLOW"},
    {{"--yarn-beta-fast"}, true, "LLAMA_ARG_YARN_BETA_FAST"},
    {{"-kvo", "--kv-offload", "-nkvo", "--no-kv-offload"}, false, "LLAMA_ARG_KV_OFFLOAD"},
    {{"--repack", "-nr", "--no-repack"}, false, "LLAMA_ARG_REPACK"},
    {{"--no-host"}, false, "LLAMA_ARG_NO_HOST"},
    {{"-ctk", "--cache-type-k"}, true, "LLAMA_ARG_CACHE_TYPE_K"},
    {{"-ctv", "--cache-type-v"}, true, "LLAMA_ARG_CACHE_TYPE_V"},
    {{"-dt", "--defrag-thold"}, true, "LLAMA_ARG_DEFRAG_THOLD"},
    {{"--mlock"}, false, "LLAMA_ARG_MLOCK"},
    {{"--mmap", "--no-mmap"}, false, "LLAMA_ARG_MMAP"},
    {{"-dio", "--direct-io", "-ndio", "--no-direct-io"}, false, "LLAMA_ARG_DIO"},
    {{"--numa"}, true, "LLAMA_ARG_NUMA"},
    {{"-dev", "--device"}, true, "LLAMA_ARG_DEVICE"},
    {{"-ot", "--override-tensor"}, true, "LLAMA_ARG_OVERRIDE_TENSOR"},
    {{"-cmoe", "--cpu-moe"}, false, "LLAMA_ARG_CPU_MOE"},
    {{"-ncmoe", "--n-cpu-moe"}, true, "LLAMA_ARG_N_CPU_MOE"},
    {{"-ngl", "--gpu-layers", "--n-gpu-layers"}, true, "LLAMA_ARG_N_GPU_LAYERS"},
    {{"-sm", "--split-mode"}, true, "LLAMA_ARG_SPLIT_MODE"},
    {{"-ts", "--tensor-split"}, true, "LLAMA_ARG_TENSOR_SPLIT"},
    {{"-mg", "--main-gpu"}, true, "LLAMA_ARG_MAIN_GPU"},
    {{"-fit", "--fit"}, true, "off] | LLAMA_ARG_FIT"},
    {{"-fitt", "--fit-target"}, true, "LLAMA_ARG_FIT_TARGET"},
    {{"-fitc", "--fit-ctx"}, true, "LLAMA_ARG_FIT_CTX"},
    {{"--check-tensors"}, false, ""},
    {{"--override-kv"}, true, ""},
    {{"--op-offload", "--no-op-offload"}, false, ""},
    {{"--lora"}, true, ""},
    {{"--lora-scaled"}, true, ""},
    {{"--control-vector"}, true, ""},
    {{"--control-vector-scaled"}, true, ""},
    {{"--control-vector-layer-range"}, true, ""},
    {{"-m", "--model"}, true, "LLAMA_ARG_MODEL"},
    {{"-mu", "--model-url"}, true, "LLAMA_ARG_MODEL_URL"},
    {{"-dr", "--docker-repo"}, true, "LLAMA_ARG_DOCKER_REPO"},
    {{"-hf", "-hfr", "--hf-repo"}, true, "LLAMA_ARG_HF_REPO"},
    {{"-hff", "--hf-file"}, true, "LLAMA_ARG_HF_FILE"},
    {{"-hfv", "-hfrv", "--hf-repo-v"}, true, "LLAMA_ARG_HF_REPO_V"},
    {{"-hffv", "--hf-file-v"}, true, "LLAMA_ARG_HF_FILE_V"},
    {{"-hft", "--hf-token"}, true, "HF_TOKEN"},
    {{"--log-disable"}, false, ""},
    {{"--log-file"}, true, "LLAMA_ARG_LOG_FILE"},
    {{"--log-colors"}, true, "off|auto] | LLAMA_ARG_LOG_COLORS"},
    {{"-v", "--verbose", "--log-verbose"}, false, ""},
    {{"--offline"}, false, "LLAMA_ARG_OFFLINE"},
    {{"-lv", "--verbosity", "--log-verbosity"}, true, "LLAMA_ARG_LOG_VERBOSITY"},
    {{"--log-prefix", "--no-log-prefix"}, false, "LLAMA_ARG_LOG_PREFIX"},
    {{"--log-timestamps", "--no-log-timestamps"}, false, "LLAMA_ARG_LOG_TIMESTAMPS"},
    {{"--spec-draft-type-k", "-ctkd", "--cache-type-k-draft"}, true, "LLAMA_ARG_SPEC_DRAFT_CACHE_TYPE_K"},
    {{"--spec-draft-type-v", "-ctvd", "--cache-type-v-draft"}, true, "LLAMA_ARG_SPEC_DRAFT_CACHE_TYPE_V"},
    {{"--samplers"}, true, ""},
    {{"-s", "--seed"}, true, ""},
    {{"--sampler-seq", "--sampling-seq"}, true, ""},
    {{"--ignore-eos"}, false, ""},
    {{"--temp", "--temperature"}, true, ""},
    {{"--top-k"}, true, "LLAMA_ARG_TOP_K"},
    {{"--top-p"}, true, ""},
    {{"--min-p"}, true, ""},
    {{"--top-nsigma", "--top-n-sigma"}, true, ""},
    {{"--xtc-probability"}, true, ""},
    {{"--xtc-threshold"}, true, ""},
    {{"--typical", "--typical-p"}, true, ""},
    {{"--repeat-last-n"}, true, ""},
    {{"--repeat-penalty"}, true, ""},
    {{"--presence-penalty"}, true, ""},
    {{"--frequency-penalty"}, true, ""},
    {{"--dry-multiplier"}, true, ""},
    {{"--dry-base"}, true, ""},
    {{"--dry-allowed-length"}, true, ""},
    {{"--dry-penalty-last-n"}, true, ""},
    {{"--dry-sequence-breaker"}, true, ""},
    {{"--adaptive-target"}, true, ""},
    {{"--adaptive-decay"}, true, ""},
    {{"--dynatemp-range"}, true, ""},
    {{"--dynatemp-exp"}, true, ""},
    {{"--mirostat"}, true, ""},
    {{"--mirostat-lr"}, true, ""},
    {{"--mirostat-ent"}, true, ""},
    {{"-l", "--logit-bias"}, true, ""},
    {{"--grammar"}, true, ""},
    {{"--grammar-file"}, true, ""},
    {{"-j", "--json-schema"}, true, ""},
    {{"-jf", "--json-schema-file"}, true, ""},
    {{"-bs", "--backend-sampling"}, false, "LLAMA_ARG_BACKEND_SAMPLING"},
    {{"-lcs", "--lookup-cache-static"}, true, ""},
    {{"-lcd", "--lookup-cache-dynamic"}, true, ""},
    {{"-ctxcp", "--ctx-checkpoints", "--swa-checkpoints"}, true, "LLAMA_ARG_CTX_CHECKPOINTS"},
    {{"-cms", "--checkpoint-min-step"}, true, "LLAMA_ARG_CHECKPOINT_MIN_SPACING_NT"},
    {{"-cram", "--cache-ram"}, true, "LLAMA_ARG_CACHE_RAM"},
    {{"-kvu", "--kv-unified", "-no-kvu", "--no-kv-unified"}, false, "LLAMA_ARG_KV_UNIFIED"},
    {{"--cache-idle-slots", "--no-cache-idle-slots"}, false, "LLAMA_ARG_CACHE_IDLE_SLOTS"},
    {{"--context-shift", "--no-context-shift"}, false, "LLAMA_ARG_CONTEXT_SHIFT"},
    {{"-r", "--reverse-prompt"}, true, ""},
    {{"-sp", "--special"}, false, ""},
    {{"--warmup", "--no-warmup"}, false, ""},
    {{"--spm-infill"}, false, ""},
    {{"--pooling"}, true, "LLAMA_ARG_POOLING"},
    {{"-np", "--parallel"}, true, "LLAMA_ARG_N_PARALLEL"},
    {{"-cb", "--cont-batching", "-nocb", "--no-cont-batching"}, false, "LLAMA_ARG_CONT_BATCHING"},
    {{"-mm", "--mmproj"}, true, "LLAMA_ARG_MMPROJ"},
    {{"-mmu", "--mmproj-url"}, true, "LLAMA_ARG_MMPROJ_URL"},
    {{"--mmproj-auto", "--no-mmproj", "--no-mmproj-auto"}, false, "LLAMA_ARG_MMPROJ_AUTO"},
    {{"--mmproj-offload", "--no-mmproj-offload"}, false, "LLAMA_ARG_MMPROJ_OFFLOAD"},
    {{"--image-min-tokens"}, true, "LLAMA_ARG_IMAGE_MIN_TOKENS"},
    {{"--image-max-tokens"}, true, "LLAMA_ARG_IMAGE_MAX_TOKENS"},
    {{"-a", "--alias"}, true, "LLAMA_ARG_ALIAS"},
    {{"--tags"}, true, "LLAMA_ARG_TAGS"},
    {{"--embd-normalize"}, true, ""},
    {{"--host"}, true, "LLAMA_ARG_HOST"},
    {{"--port"}, true, "LLAMA_ARG_PORT"},
    {{"--reuse-port"}, false, "LLAMA_ARG_REUSE_PORT"},
    {{"--path"}, true, "LLAMA_ARG_STATIC_PATH"},
    {{"--api-prefix"}, true, "LLAMA_ARG_API_PREFIX"},
    {{"--webui-config"}, true, "LLAMA_ARG_WEBUI_CONFIG"},
    {{"--ui-config"}, true, "LLAMA_ARG_UI_CONFIG"},
    {{"--webui-config-file"}, true, "LLAMA_ARG_WEBUI_CONFIG_FILE"},
    {{"--ui-config-file"}, true, "LLAMA_ARG_UI_CONFIG_FILE"},
    {{"--webui-mcp-proxy", "--no-webui-mcp-proxy"}, false, "LLAMA_ARG_WEBUI_MCP_PROXY"},
    {{"--ui-mcp-proxy", "--no-ui-mcp-proxy"}, false, "LLAMA_ARG_UI_MCP_PROXY"},
    {{"--tools"}, true, "LLAMA_ARG_TOOLS"},
    {{"--webui", "--no-webui"}, false, "LLAMA_ARG_WEBUI"},
    {{"--ui", "--no-ui"}, false, "LLAMA_ARG_UI"},
    {{"--embedding", "--embeddings"}, false, "LLAMA_ARG_EMBEDDINGS"},
    {{"--rerank", "--reranking"}, false, "LLAMA_ARG_RERANKING"},
    {{"--api-key"}, true, "LLAMA_API_KEY"},
    {{"--api-key-file"}, true, "LLAMA_ARG_API_KEY_FILE"},
    {{"--ssl-key-file"}, true, "LLAMA_ARG_SSL_KEY_FILE"},
    {{"--ssl-cert-file"}, true, "LLAMA_ARG_SSL_CERT_FILE"},
    {{"--chat-template-kwargs"}, true, "LLAMA_ARG_CHAT_TEMPLATE_KWARGS"},
    {{"-to", "--timeout"}, true, "LLAMA_ARG_TIMEOUT"},
    {{"--threads-http"}, true, "LLAMA_ARG_THREADS_HTTP"},
    {{"--cache-prompt", "--no-cache-prompt"}, false, "LLAMA_ARG_CACHE_PROMPT"},
    {{"--cache-reuse"}, true, "LLAMA_ARG_CACHE_REUSE"},
    {{"--metrics"}, false, "LLAMA_ARG_ENDPOINT_METRICS"},
    {{"--props"}, false, "LLAMA_ARG_ENDPOINT_PROPS"},
    {{"--slots", "--no-slots"}, false, "LLAMA_ARG_ENDPOINT_SLOTS"},
    {{"--slot-save-path"}, true, ""},
    {{"--media-path"}, true, ""},
    {{"--models-dir"}, true, "LLAMA_ARG_MODELS_DIR"},
    {{"--models-preset"}, true, "LLAMA_ARG_MODELS_PRESET"},
    {{"--models-max"}, true, "LLAMA_ARG_MODELS_MAX"},
    {{"--models-autoload", "--no-models-autoload"}, false, "LLAMA_ARG_MODELS_AUTOLOAD"},
    {{"--jinja", "--no-jinja"}, false, "LLAMA_ARG_JINJA"},
    {{"--reasoning-format"}, true, "LLAMA_ARG_THINK"},
    {{"-rea", "--reasoning"}, true, "off|auto] | LLAMA_ARG_REASONING"},
    {{"--reasoning-budget"}, true, "LLAMA_ARG_THINK_BUDGET"},
    {{"--reasoning-budget-message"}, true, "LLAMA_ARG_THINK_BUDGET_MESSAGE"},
    {{"--chat-template"}, true, "LLAMA_ARG_CHAT_TEMPLATE"},
    {{"--chat-template-file"}, true, "LLAMA_ARG_CHAT_TEMPLATE_FILE"},
    {{"--skip-chat-parsing", "--no-skip-chat-parsing"}, false, "LLAMA_ARG_SKIP_CHAT_PARSING"},
    {{"--prefill-assistant", "--no-prefill-assistant"}, false, "LLAMA_ARG_PREFILL_ASSISTANT"},
    {{"-sps", "--slot-prompt-similarity"}, true, ""},
    {{"--lora-init-without-apply"}, false, ""},
    {{"--sleep-idle-seconds"}, true, ""},
    {{"--spec-draft-hf", "-hfd", "-hfrd", "--hf-repo-draft"}, true, "LLAMA_ARG_SPEC_DRAFT_HF_REPO"},
    {{"--spec-draft-threads", "-td", "--threads-draft"}, true, ""},
    {{"--spec-draft-threads-batch", "-tbd", "--threads-batch-draft"}, true, ""},
    {{"--spec-draft-cpu-mask", "-Cd", "--cpu-mask-draft"}, true, ""},
    {{"--spec-draft-cpu-range", "-Crd", "--cpu-range-draft"}, true, ""},
    {{"--spec-draft-cpu-strict", "--cpu-strict-draft"}, true, "1> |"},
    {{"--spec-draft-prio", "--prio-draft"}, true, ""},
    {{"--spec-draft-poll", "--poll-draft"}, true, "1> |"},
    {{"--spec-draft-cpu-mask-batch", "-Cbd", "--cpu-mask-batch-draft"}, true, ""},
    {{"--spec-draft-cpu-strict-batch", "--cpu-strict-batch-draft"}, true, "1> |"},
    {{"--spec-draft-prio-batch", "--prio-batch-draft"}, true, ""},
    {{"--spec-draft-poll-batch", "--poll-batch-draft"}, true, "1> |"},
    {{"--spec-draft-override-tensor", "-otd", "--override-tensor-draft"}, true, ""},
    {{"--spec-draft-cpu-moe", "-cmoed", "--cpu-moe-draft"}, false, "LLAMA_ARG_SPEC_DRAFT_CPU_MOE"},
    {{"--spec-draft-n-cpu-moe", "--spec-draft-ncmoe", "-ncmoed", "--n-cpu-moe-draft"}, true, "LLAMA_ARG_SPEC_DRAFT_N_CPU_MOE"},
    {{"--spec-draft-n-max"}, true, "LLAMA_ARG_SPEC_DRAFT_N_MAX"},
    {{"--spec-draft-n-min"}, true, "LLAMA_ARG_SPEC_DRAFT_N_MIN"},
    {{"--spec-draft-p-split", "--draft-p-split"}, true, "LLAMA_ARG_SPEC_DRAFT_P_SPLIT"},
    {{"--spec-draft-p-min", "--draft-p-min"}, true, "LLAMA_ARG_SPEC_DRAFT_P_MIN"},
    {{"--spec-draft-backend-sampling", "--no-spec-draft-backend-sampling"}, false, "LLAMA_ARG_SPEC_DRAFT_BACKEND_SAMPLING"},
    {{"--spec-draft-device", "-devd", "--device-draft"}, true, ""},
    {{"--spec-draft-ngl", "-ngld", "--gpu-layers-draft", "--n-gpu-layers-draft"}, true, "LLAMA_ARG_N_GPU_LAYERS_DRAFT"},
    {{"--spec-draft-model", "-md", "--model-draft"}, true, "LLAMA_ARG_SPEC_DRAFT_MODEL"},
    {{"--spec-type"}, true, "LLAMA_ARG_SPEC_TYPE"},
    {{"--spec-ngram-mod-n-min"}, true, ""},
    {{"--spec-ngram-mod-n-max"}, true, ""},
    {{"--spec-ngram-mod-n-match"}, true, ""},
    {{"--spec-ngram-simple-size-n"}, true, ""},
    {{"--spec-ngram-simple-size-m"}, true, ""},
    {{"--spec-ngram-simple-min-hits"}, true, ""},
    {{"--spec-ngram-map-k-size-n"}, true, ""},
    {{"--spec-ngram-map-k-size-m"}, true, ""},
    {{"--spec-ngram-map-k-min-hits"}, true, ""},
    {{"--spec-ngram-map-k4v-size-n"}, true, ""},
    {{"--spec-ngram-map-k4v-size-m"}, true, ""},
    {{"--spec-ngram-map-k4v-min-hits"}, true, ""},
    {{"--draft", "--draft-n", "--draft-max"}, true, "LLAMA_ARG_DRAFT_MAX"},
    {{"--draft-min", "--draft-n-min"}, true, "LLAMA_ARG_DRAFT_MIN"},
    {{"--spec-ngram-size-n"}, true, ""},
    {{"--spec-ngram-size-m"}, true, ""},
    {{"--spec-ngram-min-hits"}, true, ""},
    {{"-mv", "--model-vocoder"}, true, ""},
    {{"--tts-use-guide-tokens"}, false, ""},
    {{"--embd-gemma-default"}, false, ""},
    {{"--fim-qwen-1.5b-default"}, false, ""},
    {{"--fim-qwen-3b-default"}, false, ""},
    {{"--fim-qwen-7b-default"}, false, ""},
    {{"--fim-qwen-7b-spec"}, false, ""},
    {{"--fim-qwen-14b-spec"}, false, ""},
    {{"--fim-qwen-30b-default"}, false, ""},
    {{"--gpt-oss-20b-default"}, false, ""},
    {{"--gpt-oss-120b-default"}, false, ""},
    {{"--vision-gemma-4b-default"}, false, ""},
    {{"--vision-gemma-12b-default"}, false, ""},
    {{"--spec-default"}, false, ""},
};

// A value each flag accepts (most take a number; these need something else).
std::string value_for(const std::string& flag, const test::TmpDir& dir) {
  static const std::map<std::string, std::string> kValues = {
      {"-fa", "on"}, {"--flash-attn", "on"}, {"-ctk", "q8_0"}, {"--cache-type-k", "q8_0"}, {"-ctv", "q2_0"},
      {"--cache-type-v", "q2_0"}, {"--reasoning-format", "none"}, {"-rea", "off"}, {"--reasoning", "off"},
      {"--chat-template", "chatml"}, {"--chat-template-kwargs", "{\"a\": 1}"}, {"-l", "15+1"},
      {"--logit-bias", "15-inf"}, {"--host", "127.0.0.1"}, {"-hf", "user/repo:Q8_0"}, {"-hfr", "user/repo"},
      {"--hf-repo", "user/repo"}, {"--pooling", "mean"}};
  if (flag == "--grammar-file" || flag == "-jf" || flag == "--json-schema-file" || flag == "--api-key-file")
    return dir.write("value.txt", "{}\n");
  const auto it = kValues.find(flag);
  return it == kValues.end() ? "1" : it->second;
}

std::vector<std::string> args_for(const std::string& flag, bool takes_value, const test::TmpDir& dir) {
  std::vector<std::string> a = {flag};
  if (takes_value) a.push_back(value_for(flag, dir));
  if (flag == "--control-vector-layer-range") a.push_back("2");
  // The TLS pair goes together.
  if (flag == "--ssl-key-file") a.insert(a.end(), {"--ssl-cert-file", "c.pem"});
  if (flag == "--ssl-cert-file") a.insert(a.end(), {"--ssl-key-file", "k.pem"});
  return a;
}

TEST(ServerFlags, EveryReadmeFlagIsAcceptedBySpelling) {
  const test::TmpDir dir("flags");
  for (const auto& f : kReadmeFlags)
    for (const auto& name : f.names) {
      SCOPED_TRACE(name);
      EXPECT_NO_THROW(parse(args_for(name, f.takes_value, dir)));
    }
  EXPECT_GE(kReadmeFlags.size(), 230u);
}

TEST(ServerFlags, EveryReadmeVariableIsRead) {
  const test::TmpDir dir("flags-env");
  for (const auto& f : kReadmeFlags) {
    if (f.env.empty() || f.env == "LLAMA_ARG_SSL_KEY_FILE" || f.env == "LLAMA_ARG_SSL_CERT_FILE") continue;
    SCOPED_TRACE(f.env);
    const std::string v = f.takes_value ? value_for(f.names.front(), dir) : "1";
    EXPECT_NO_THROW(parse({}, {{f.env, v}}));
  }
}

TEST(ServerFlags, HelpListsEveryReadmeFlagInLlamaServerGroups) {
  const std::string help = server_usage();
  for (const auto& f : kReadmeFlags)
    for (const auto& name : f.names) EXPECT_NE(help.find(name), std::string::npos) << name;
  const size_t common = help.find("----- common params -----");
  const size_t sampling = help.find("----- sampling params -----");
  const size_t example = help.find("----- example-specific params -----");
  ASSERT_NE(common, std::string::npos);
  ASSERT_NE(sampling, std::string::npos);
  ASSERT_NE(example, std::string::npos);
  EXPECT_LT(common, sampling);
  EXPECT_LT(sampling, example);
  // Flags sit in their llama-server group.
  EXPECT_GT(help.find("--top-k N"), sampling);
  EXPECT_LT(help.find("--top-k N"), example);
  EXPECT_GT(help.find("--slot-save-path"), example);
  // The built-in template names are spelled out.
  EXPECT_NE(help.find("deepseek3"), std::string::npos);
  EXPECT_NE(help.find("mistral-v7"), std::string::npos);
}

TEST(ServerFlags, UnknownFlagSuggestsTheNearest) {
  try {
    parse({"--ofline"});
    FAIL() << "accepted --ofline";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("unknown flag '--ofline'"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("did you mean '--offline'?"), std::string::npos) << e.what();
  }
  try {
    parse({"--ctx-sise", "8"});
    FAIL();
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("'--ctx-size'"), std::string::npos) << e.what();
  }
  // Nothing close: no suggestion.
  try {
    parse({"--zzzzzzzzzzzzzzzz"});
    FAIL();
  } catch (const Error& e) {
    EXPECT_EQ(std::string(e.what()).find("did you mean"), std::string::npos) << e.what();
  }
  EXPECT_THROW(parse({"-c"}), Error);          // missing value
  EXPECT_THROW(parse({"-c", "many"}), Error);  // not a number
}

TEST(ServerFlags, VariablesApplyAndFlagsBeatThem) {
  auto a = parse({}, {{"LLAMA_ARG_CTX_SIZE", "1234"}, {"LLAMA_ARG_N_PARALLEL", "3"}, {"LLAMA_ARG_PORT", "9999"},
                      {"LLAMA_API_KEY", "k1,k2"}, {"LLAMA_ARG_ENDPOINT_METRICS", "1"}, {"LLAMA_ARG_TOP_K", "7"},
                      {"LLAMA_ARG_TAGS", "chat,small"}});
  EXPECT_EQ(a.run.n_ctx, 1234);
  EXPECT_EQ(a.server.n_parallel, 3);
  EXPECT_EQ(a.server.port, 9999);
  EXPECT_EQ(a.server.api_keys, (std::vector<std::string>{"k1", "k2"}));
  EXPECT_TRUE(a.server.metrics);
  EXPECT_EQ(a.run.sampling.top_k, 7);
  EXPECT_EQ(a.server.tags, (std::vector<std::string>{"chat", "small"}));
  // The flag wins over its variable (and the variable is not added to it).
  a = parse({"-c", "64", "--api-key", "k3"}, {{"LLAMA_ARG_CTX_SIZE", "1234"}, {"LLAMA_API_KEY", "k1"}});
  EXPECT_EQ(a.run.n_ctx, 64);
  EXPECT_EQ(a.server.api_keys, (std::vector<std::string>{"k3"}));
  // On/off variables: true/false words, and LLAMA_ARG_NO_X turns X off.
  EXPECT_TRUE(parse({}, {{"LLAMA_ARG_MMAP", "enabled"}}).run.use_mmap);
  EXPECT_TRUE(parse({"--mmap"}).run.use_mmap);
  EXPECT_FALSE(parse({}, {{"LLAMA_ARG_MMAP", "true"}, {"LLAMA_ARG_NO_MMAP", "1"}}).run.use_mmap);
  EXPECT_FALSE(parse({}, {{"LLAMA_ARG_ENDPOINT_SLOTS", "off"}}).server.slots_endpoint);
  EXPECT_THROW(parse({}, {{"LLAMA_ARG_ENDPOINT_SLOTS", "maybe"}}), Error);
  EXPECT_THROW(parse({}, {{"LLAMA_ARG_CTX_SIZE", "big"}}), Error);
  // The OSCAR variables still work beside them.
  EXPECT_EQ(parse({"-ctk", "q2_0"}, {{"LLAMA_KV_HP_SINK", "16"}}).run.kv_hp_sink, 16);
}

TEST(ServerFlags, NoEffectFlagsSayWhyInOneLineEach) {
  const auto a = parse({"-ngl", "99", "--numa", "distribute", "-ngl", "all", "--mlock", "-sm", "row"});
  ASSERT_EQ(a.run.flag_notes.size(), 4u);  // -ngl given twice: one line
  EXPECT_NE(a.run.flag_notes[0].find("-ngl"), std::string::npos);
  EXPECT_NE(a.run.flag_notes[0].find("CPU"), std::string::npos);
  EXPECT_NE(a.run.flag_notes[1].find("--numa"), std::string::npos);
  // Flags that work leave no note.
  EXPECT_TRUE(parse({"-c", "128", "--temp", "0.5", "--offline"}).run.flag_notes.empty());
  // A variable of a no-effect flag is noted under the variable's name.
  const auto b = parse({}, {{"LLAMA_ARG_N_GPU_LAYERS", "99"}});
  ASSERT_EQ(b.run.flag_notes.size(), 1u);
  EXPECT_NE(b.run.flag_notes[0].find("LLAMA_ARG_N_GPU_LAYERS"), std::string::npos);
}

TEST(ServerFlags, SamplingFlagsBecomeRequestDefaults) {
  const auto a = parse({"--temp", "0.25", "--top-k", "5", "--top-p", "0.5", "--min-p", "0.1", "--typical", "0.9",
                        "--repeat-penalty", "1.2", "--repeat-last-n", "32", "--presence-penalty", "0.3",
                        "--frequency-penalty", "0.4", "-n", "17", "--seed", "42", "--ignore-eos", "-l", "15+2",
                        "--logit-bias", "3-inf", "--no-cache-prompt"});
  const auto& p = a.run.sampling;
  EXPECT_FLOAT_EQ(p.temperature, 0.25f);
  EXPECT_EQ(p.top_k, 5);
  EXPECT_FLOAT_EQ(p.top_p, 0.5f);
  EXPECT_FLOAT_EQ(p.min_p, 0.1f);
  EXPECT_FLOAT_EQ(p.typical_p, 0.9f);
  EXPECT_FLOAT_EQ(p.repeat_penalty, 1.2f);
  EXPECT_EQ(p.penalty_last_n, 32);
  EXPECT_FLOAT_EQ(p.presence_penalty, 0.3f);
  EXPECT_FLOAT_EQ(p.frequency_penalty, 0.4f);
  EXPECT_EQ(a.run.n_predict, 17);
  EXPECT_EQ(p.seed, 42u);
  EXPECT_TRUE(a.server.seed_given);
  EXPECT_TRUE(a.run.ignore_eos);
  EXPECT_FALSE(a.run.cache_prompt);
  ASSERT_EQ(p.logit_bias.size(), 2u);
  EXPECT_EQ(p.logit_bias[0], (std::pair<int32_t, float>{15, 2.0f}));
  EXPECT_EQ(p.logit_bias[1].first, 3);
  EXPECT_TRUE(std::isinf(p.logit_bias[1].second) && p.logit_bias[1].second < 0);
  // --seed -1 is llama-server's "random per request".
  EXPECT_FALSE(parse({"--seed", "-1"}).server.seed_given);
}

TEST(ServerFlags, ServerFlagsLandInTheSettings) {
  const test::TmpDir dir("flags-server");
  const std::string keys = dir.write("keys.txt", "file-key\n\n");
  const auto a = parse({"--api-key", "a,b", "--api-key-file", keys, "-to", "30", "--props", "--no-slots", "--tags",
                        "x,y", "-a", "my-model", "--context-shift", "-cram", "1024", "--sleep-idle-seconds", "60",
                        "--slot-save-path", dir.file("slots"), "--no-prefill-assistant", "--skip-chat-parsing", "-v",
                        "--offline", "-hf", "u/r:Q4_0", "-hff", "f.gguf", "-hft", "tok"});
  EXPECT_EQ(a.server.api_keys, (std::vector<std::string>{"a", "b", "file-key"}));
  EXPECT_EQ(a.server.timeout_s, 30);
  EXPECT_TRUE(a.server.props_endpoint);
  EXPECT_FALSE(a.server.slots_endpoint);
  EXPECT_EQ(a.server.tags, (std::vector<std::string>{"x", "y"}));
  EXPECT_EQ(a.server.alias, "my-model");
  EXPECT_TRUE(a.server.context_shift);
  EXPECT_EQ(a.server.cache_ram_mib, 1024);
  EXPECT_EQ(a.server.sleep_idle_seconds, 60);
  EXPECT_EQ(a.server.slot_save_path, dir.file("slots"));
  EXPECT_FALSE(a.server.prefill_assistant);
  EXPECT_TRUE(a.server.skip_chat_parsing);
  EXPECT_TRUE(a.server.verbose);
  EXPECT_TRUE(a.run.offline);
  EXPECT_EQ(a.run.hf_repo, "u/r:Q4_0");
  EXPECT_EQ(a.run.hf_file, "f.gguf");
  EXPECT_EQ(a.run.hf_token, "tok");
  // Flags that work are not noted as having no effect.
  for (const auto& n : a.run.flag_notes) {
    EXPECT_EQ(n.find("--sleep-idle-seconds"), std::string::npos) << n;
    EXPECT_EQ(n.find("--context-shift"), std::string::npos) << n;
  }
  EXPECT_THROW(parse({"--sleep-idle-seconds", "0"}), Error);  // as llama-server: -1 or a positive number
  EXPECT_THROW(parse({"--ssl-key-file", "k.pem"}), Error);  // the certificate is missing
  EXPECT_THROW(parse({"--host", "/tmp/x.sock"}), Error);
  EXPECT_THROW(parse({"-np", "0"}), Error);
  EXPECT_EQ(parse({"-np", "-1"}).server.n_parallel, 4);  // llama-server's "auto"
  EXPECT_THROW(parse({"-mu", "http://h/m.gguf", "-hf", "u/r"}), Error);
}

TEST(ServerFlags, ChatTemplateFlags) {
  EXPECT_EQ(parse({"--chat-template", "llama3"}).run.chat_template, "llama3");
  try {
    parse({"--chat-template", "llama9"});
    FAIL();
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("'llama9'"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("chatml"), std::string::npos) << e.what();
  }
  EXPECT_NO_THROW(parse({"--chat-template", "{{ messages[0].content }}"}));
  EXPECT_THROW(parse({"--no-jinja", "--chat-template", "{{ messages[0].content }}"}), Error);
  EXPECT_NO_THROW(parse({"--no-jinja", "--chat-template", "gemma"}));
  EXPECT_THROW(parse({"--chat-template-kwargs", "{nope"}), Error);
  EXPECT_THROW(parse({"--chat-template-kwargs", "[1]"}), Error);
  EXPECT_THROW(parse({"--reasoning", "sometimes"}), Error);
  EXPECT_THROW(parse({"--reasoning-budget", "-2"}), Error);

  // Default template variables of chat requests.
  auto kw = parse({"--chat-template-kwargs", "{\"foo\": \"bar\"}"}).server.default_template_kwargs;
  EXPECT_EQ(kw, (nlohmann::ordered_json{{"foo", "bar"}}));
  EXPECT_EQ(parse({"--reasoning", "off"}).server.default_template_kwargs["enable_thinking"], false);
  EXPECT_EQ(parse({"-rea", "on"}).server.default_template_kwargs["enable_thinking"], true);
  EXPECT_EQ(parse({"--reasoning-budget", "0"}).server.default_template_kwargs["enable_thinking"], false);
  EXPECT_FALSE(parse({"--reasoning", "auto"}).server.default_template_kwargs.contains("enable_thinking"));
  // Explicit kwargs win over --reasoning.
  kw = parse({"--reasoning", "off", "--chat-template-kwargs", "{\"enable_thinking\": true}"}).server.default_template_kwargs;
  EXPECT_EQ(kw["enable_thinking"], true);
}

TEST(ServerFlags, ChooseChatTemplate) {
  std::vector<std::string> notes;
  RunSettings s;
  const std::string model_tmpl = "{% for m in messages %}<|start_header_id|>{{ m.content }}{% endfor %}";
  EXPECT_EQ(choose_chat_template(s, model_tmpl, notes).source, model_tmpl);
  s.jinja = false;  // --no-jinja: the built-in the model's template resembles
  const auto c = choose_chat_template(s, model_tmpl, notes);
  EXPECT_NE(c.origin.find("llama3"), std::string::npos) << c.origin;
  EXPECT_NE(c.source, model_tmpl);
  s.jinja = true;
  s.chat_template = "zephyr";
  EXPECT_NE(choose_chat_template(s, model_tmpl, notes).source.find("<|endoftext|>"), std::string::npos);
  s.chat_template.clear();
  notes.clear();
  EXPECT_NE(choose_chat_template(s, "", notes).source.find("<|im_start|>"), std::string::npos);
  EXPECT_EQ(notes.size(), 1u);  // said that chatml stands in
}

}  // namespace
}  // namespace oscar::tools
