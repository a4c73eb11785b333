// The OSCAR KV settings at the tools' edge: LLAMA_KV_* environment variables
// are applied first, then flags (a flag beats a variable); kv_config() fills
// OSCAR's defaults when q2_0 is used (clip K 0.96 / V 0.92, sink 512, recent
// 2048); bad values are refused with oscar::Error.
#include <gtest/gtest.h>

#include <map>
#include <string>
#include <vector>

#include "core/error.h"
#include "run_settings.h"

namespace oscar::tools {
namespace {

using Env = std::map<std::string, std::string>;

RunSettings parse(std::vector<std::string> args, const Env& env = {}) {
  args.insert(args.begin(), "oscar-test");
  std::vector<char*> argv;
  for (auto& a : args) argv.push_back(a.data());
  argv.push_back(nullptr);
  EnvLookup lookup = [env](const char* name) -> const char* {
    auto it = env.find(name);
    return it == env.end() ? nullptr : it->second.c_str();
  };
  return parse_run_settings((int)args.size(), argv.data(), nullptr, lookup);
}

const std::vector<std::string> kQ2 = {"-ctk", "q2_0", "-ctv", "q2_0"};

std::vector<std::string> operator+(std::vector<std::string> a, const std::vector<std::string>& b) {
  a.insert(a.end(), b.begin(), b.end());
  return a;
}

TEST(KvSettings, DefaultsForQ2) {
  const auto s = parse(kQ2);
  EXPECT_EQ(s.cache_k, kv::CacheType::Q2_0);
  EXPECT_EQ(s.cache_v, kv::CacheType::Q2_0);
  EXPECT_TRUE(s.kv_fused);
  EXPECT_FALSE(s.kv_no_hadamard);
  const auto c = kv_config(s, 3, 16384);
  EXPECT_EQ(c.type_k, kv::CacheType::Q2_0);
  EXPECT_EQ(c.n_seq, 3);
  EXPECT_EQ(c.n_ctx_seq, 16384);
  EXPECT_FLOAT_EQ(c.q2_k.clip_ratio, 0.96f);
  EXPECT_FLOAT_EQ(c.q2_v.clip_ratio, 0.92f);
  EXPECT_EQ(c.q2_k.group_size, 0);  // the head dim
  EXPECT_EQ(c.q2_v.group_size, 0);
  EXPECT_EQ(c.hp_sink, 512);
  EXPECT_EQ(c.hp_recent, 2048);
}

TEST(KvSettings, DefaultsForF16) {
  const auto s = parse({});
  EXPECT_EQ(s.cache_k, kv::CacheType::F16);
  EXPECT_EQ(s.cache_v, kv::CacheType::F16);
  const auto c = kv_config(s, 1, 4096);
  EXPECT_EQ(c.type_k, kv::CacheType::F16);
  EXPECT_EQ(c.hp_sink, 0);
  EXPECT_EQ(c.hp_recent, 0);
  EXPECT_TRUE(s.kv_fused);
  // q8_0 alone gets no OSCAR tiers by default either.
  const auto c8 = kv_config(parse({"-ctk", "q8_0", "-ctv", "q8_0"}), 1, 4096);
  EXPECT_EQ(c8.hp_sink, 0);
  EXPECT_EQ(c8.hp_recent, 0);
}

TEST(KvSettings, OnlyOneSideQ2StillGetsTheDefaults) {
  const auto c = kv_config(parse({"--cache-type-k", "q2_0"}), 1, 1024);
  EXPECT_EQ(c.type_k, kv::CacheType::Q2_0);
  EXPECT_EQ(c.type_v, kv::CacheType::F16);
  EXPECT_FLOAT_EQ(c.q2_k.clip_ratio, 0.96f);
  EXPECT_EQ(c.hp_sink, 512);
  EXPECT_EQ(c.hp_recent, 2048);
  const auto cv = kv_config(parse({"--cache-type-v", "Q2_0"}), 1, 1024);
  EXPECT_EQ(cv.type_v, kv::CacheType::Q2_0);
  EXPECT_FLOAT_EQ(cv.q2_v.clip_ratio, 0.92f);
  EXPECT_EQ(cv.hp_recent, 2048);
}

TEST(KvSettings, ClipRatioEnvSetsBoth) {
  const auto s = parse(kQ2, {{"LLAMA_KV_CLIP_RATIO", "0.9"}});
  ASSERT_TRUE(s.kv_clip_k && s.kv_clip_v);
  EXPECT_FLOAT_EQ(*s.kv_clip_k, 0.9f);
  EXPECT_FLOAT_EQ(*s.kv_clip_v, 0.9f);
  const auto c = kv_config(s, 1, 64);
  EXPECT_FLOAT_EQ(c.q2_k.clip_ratio, 0.9f);
  EXPECT_FLOAT_EQ(c.q2_v.clip_ratio, 0.9f);
  // 0 disables clipping for both.
  const auto c0 = kv_config(parse(kQ2, {{"LLAMA_KV_CLIP_RATIO", "0"}}), 1, 64);
  EXPECT_EQ(c0.q2_k.clip_ratio, 0.0f);
  EXPECT_EQ(c0.q2_v.clip_ratio, 0.0f);
  // An empty variable counts as unset.
  const auto ce = kv_config(parse(kQ2, {{"LLAMA_KV_CLIP_RATIO", ""}}), 1, 64);
  EXPECT_FLOAT_EQ(ce.q2_k.clip_ratio, 0.96f);
}

TEST(KvSettings, FlagsBeatEnv) {
  const Env env = {{"LLAMA_KV_CLIP_RATIO", "0.9"}, {"LLAMA_KV_HP_SINK", "64"}, {"LLAMA_KV_HP_RECENT", "256"},
                   {"LLAMA_KV_FUSED_FA", "0"}};
  const auto s = parse(kQ2 + std::vector<std::string>{"--kv-clip-k", "0.5", "--kv-hp-sink", "8", "--kv-hp-recent", "16",
                                                      "--kv-fused-fa", "1"},
                       env);
  const auto c = kv_config(s, 1, 64);
  EXPECT_FLOAT_EQ(c.q2_k.clip_ratio, 0.5f);
  EXPECT_FLOAT_EQ(c.q2_v.clip_ratio, 0.9f);  // from the env, no flag for V
  EXPECT_EQ(c.hp_sink, 8);
  EXPECT_EQ(c.hp_recent, 16);
  EXPECT_TRUE(s.kv_fused);
  const auto v = kv_config(parse(kQ2 + std::vector<std::string>{"--kv-clip-v", "0.75"}, env), 1, 64);
  EXPECT_FLOAT_EQ(v.q2_k.clip_ratio, 0.9f);
  EXPECT_FLOAT_EQ(v.q2_v.clip_ratio, 0.75f);
}

TEST(KvSettings, TierEnv) {
  const auto c = kv_config(parse(kQ2, {{"LLAMA_KV_HP_SINK", "64"}, {"LLAMA_KV_HP_RECENT", "256"}}), 1, 64);
  EXPECT_EQ(c.hp_sink, 64);
  EXPECT_EQ(c.hp_recent, 256);
  // 0 is a value, not "unset": no tiers.
  const auto z = kv_config(parse(kQ2, {{"LLAMA_KV_HP_SINK", "0"}, {"LLAMA_KV_HP_RECENT", "0"}}), 1, 64);
  EXPECT_EQ(z.hp_sink, 0);
  EXPECT_EQ(z.hp_recent, 0);
  // Explicit tiers also apply to other quantized types.
  const auto q8 = kv_config(parse({"-ctk", "q8_0", "-ctv", "q4_0"}, {{"LLAMA_KV_HP_SINK", "4"}}), 1, 64);
  EXPECT_EQ(q8.hp_sink, 4);
  EXPECT_EQ(q8.hp_recent, 0);
}

TEST(KvSettings, FusedAndHadamardEnv) {
  EXPECT_FALSE(parse({}, {{"LLAMA_KV_FUSED_FA", "0"}}).kv_fused);
  EXPECT_TRUE(parse({}, {{"LLAMA_KV_FUSED_FA", "1"}}).kv_fused);
  EXPECT_FALSE(parse({"--kv-fused-fa", "0"}).kv_fused);
  EXPECT_FALSE(parse({"--kv-fused-fa", "0"}, {{"LLAMA_KV_FUSED_FA", "1"}}).kv_fused);
  EXPECT_TRUE(parse({}, {{"LLAMA_KV_NO_HADAMARD", "1"}}).kv_no_hadamard);
  EXPECT_FALSE(parse({}, {{"LLAMA_KV_NO_HADAMARD", "0"}}).kv_no_hadamard);
  EXPECT_TRUE(parse({"--kv-no-hadamard"}).kv_no_hadamard);
}

// The command line of the issue, with its environment.
TEST(KvSettings, TheIssueCommandLine) {
  const Env env = {{"LLAMA_KV_FUSED_FA", "1"}, {"LLAMA_KV_NO_HADAMARD", "1"}, {"LLAMA_KV_CLIP_RATIO", "0.96"},
                   {"LLAMA_KV_HP_SINK", "512"}, {"LLAMA_KV_HP_RECENT", "2048"}};
  const auto s = parse({"-m", "qwen3-4b-rot-kv.gguf", "-fa", "on", "-ngl", "99", "-c", "16384", "--cache-type-k",
                        "q2_0", "--cache-type-v", "q2_0"},
                       env);
  EXPECT_TRUE(s.kv_fused);
  EXPECT_TRUE(s.kv_no_hadamard);
  EXPECT_EQ(s.flash_attn, "on");
  EXPECT_EQ(s.n_ctx, 16384);
  const auto c = kv_config(s, 1, s.n_ctx);
  EXPECT_FLOAT_EQ(c.q2_k.clip_ratio, 0.96f);
  EXPECT_FLOAT_EQ(c.q2_v.clip_ratio, 0.96f);  // the variable sets both
  EXPECT_EQ(c.hp_sink, 512);
  EXPECT_EQ(c.hp_recent, 2048);
}

TEST(KvSettings, GroupSize) {
  const auto c = kv_config(parse(kQ2 + std::vector<std::string>{"--kv-group-size", "32"}), 1, 64);
  EXPECT_EQ(c.q2_k.group_size, 32);
  EXPECT_EQ(c.q2_v.group_size, 32);
  EXPECT_THROW(parse({"--kv-group-size", "-4"}), Error);
  EXPECT_THROW(parse({"--kv-group-size", "x"}), Error);
}

// Sliding-window layers (Gemma) get their own types and ring slack from flags;
// unset, the cache picks (f16, or the main type when it is a float type).
TEST(KvSettings, SlidingWindowLayers) {
  const auto d = kv_config(parse(kQ2), 1, 64);
  EXPECT_FALSE(d.type_k_swa.has_value());
  EXPECT_FALSE(d.type_v_swa.has_value());
  EXPECT_EQ(d.swa_slack, 512);
  const auto c = kv_config(parse(kQ2 + std::vector<std::string>{"--kv-swa-type-k", "q8_0", "--kv-swa-type-v",
                                                                   "bf16", "--kv-swa-slack", "0"}),
                           1, 64);
  EXPECT_EQ(c.type_k_swa, kv::CacheType::Q8_0);
  EXPECT_EQ(c.type_v_swa, kv::CacheType::BF16);
  EXPECT_EQ(c.swa_slack, 0);
  EXPECT_THROW(parse({"--kv-swa-slack", "-1"}), Error);
  EXPECT_THROW(parse({"--kv-swa-type-k", "q3_0"}), Error);
}

TEST(KvSettings, BadValuesThrow) {
  EXPECT_THROW(parse(kQ2, {{"LLAMA_KV_CLIP_RATIO", "1.5"}}), Error);
  EXPECT_THROW(parse(kQ2, {{"LLAMA_KV_CLIP_RATIO", "-0.1"}}), Error);
  EXPECT_THROW(parse(kQ2, {{"LLAMA_KV_CLIP_RATIO", "abc"}}), Error);
  EXPECT_THROW(parse(kQ2, {{"LLAMA_KV_CLIP_RATIO", "0.9x"}}), Error);
  EXPECT_THROW(parse(kQ2 + std::vector<std::string>{"--kv-clip-k", "1.5"}), Error);
  EXPECT_THROW(parse(kQ2 + std::vector<std::string>{"--kv-clip-v", "1.01"}), Error);
  EXPECT_THROW(parse(kQ2 + std::vector<std::string>{"--kv-clip-v", "-1"}), Error);
  EXPECT_THROW(parse(kQ2 + std::vector<std::string>{"--kv-clip-k"}), Error);  // missing value
  EXPECT_THROW(parse(kQ2, {{"LLAMA_KV_HP_SINK", "-1"}}), Error);
  EXPECT_THROW(parse(kQ2, {{"LLAMA_KV_HP_RECENT", "-5"}}), Error);
  EXPECT_THROW(parse(kQ2, {{"LLAMA_KV_HP_SINK", "1e3"}}), Error);
  EXPECT_THROW(parse(kQ2 + std::vector<std::string>{"--kv-hp-sink", "-1"}), Error);
  EXPECT_THROW(parse(kQ2 + std::vector<std::string>{"--kv-hp-recent", "-2048"}), Error);
  EXPECT_THROW(parse({"-ctk", "q3_0"}), Error);
  EXPECT_THROW(parse({"-ctv", "int2"}), Error);
  EXPECT_THROW(parse({"--cache-type-k", ""}), Error);
  EXPECT_THROW(parse({}, {{"LLAMA_KV_FUSED_FA", "yes"}}), Error);
  EXPECT_THROW(parse({}, {{"LLAMA_KV_NO_HADAMARD", "true"}}), Error);
  EXPECT_THROW(parse({"-fa", "maybe"}), Error);
  // The error names the problem.
  try {
    parse({"-ctk", "q3_0"});
    FAIL();
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("q3_0"), std::string::npos) << e.what();
  }
}

// A bad variable is bad even when a flag overrides one of the two values it set.
TEST(KvSettings, BadEnvClipNotHiddenByFlag) {
  EXPECT_THROW(parse(kQ2 + std::vector<std::string>{"--kv-clip-k", "0.5"}, {{"LLAMA_KV_CLIP_RATIO", "1.5"}}), Error);
  EXPECT_THROW(parse(kQ2 + std::vector<std::string>{"--kv-clip-v", "0.5"}, {{"LLAMA_KV_CLIP_RATIO", "1.5"}}), Error);
}

TEST(KvSettings, NanClipRejected) {
  EXPECT_THROW(parse(kQ2 + std::vector<std::string>{"--kv-clip-k", "nan"}), Error);
  EXPECT_THROW(parse(kQ2 + std::vector<std::string>{"--kv-clip-v", "nan"}), Error);
  EXPECT_THROW(parse(kQ2, {{"LLAMA_KV_CLIP_RATIO", "nan"}}), Error);
}

// Not a KV setting, but parsed at the same edge: the weights are read into
// memory unless --mmap asks for a mapping (llama.cpp's --mmap / --no-mmap).
TEST(RunSettingsFlags, MmapChoosesMappedWeights) {
  EXPECT_FALSE(parse({}).use_mmap);
  EXPECT_TRUE(parse({"--mmap"}).use_mmap);
  EXPECT_FALSE(parse({"--mmap", "--no-mmap"}).use_mmap);
}

}  // namespace
}  // namespace oscar::tools
