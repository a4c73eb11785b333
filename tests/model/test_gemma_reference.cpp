// Gemma 3 and Gemma 4 against the independent NumPy reference
// (tests/reference/gemma_ref.py, written from the published model
// definitions): tiny random models from oscar-mkmodel (sliding window 16,
// gemma4 with sliding/global head dims 32/64, V from K, shared-KV layers,
// per-layer embeddings, output scale and soft-capping), F32 weights and an
// f32 cache, a prompt of 40 tokens (well past the window), evaluated in one
// batch, in uneven batches, token by token, as two interleaved sequences,
// through the reference attention path and with the smallest ring.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "core/error.h"
#include "gguf/gguf_writer.h"
#include "runtime/forward.h"

#include "common/tmp_dir.h"

namespace oscar {
namespace {

using test::TmpDir;

namespace fs = std::filesystem;

int run(const std::string& cmd) { return std::system(cmd.c_str()); }

std::vector<float> read_floats(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  std::vector<char> bytes((std::istreambuf_iterator<char>(f)), {});
  std::vector<float> v(bytes.size() / 4);
  std::memcpy(v.data(), bytes.data(), v.size() * 4);
  return v;
}

// Max over rows of max|a - b| / max|ref row|.
double max_rel_err(const std::vector<float>& got, const std::vector<float>& ref, int rows, int n) {
  double worst = 0;
  for (int r = 0; r < rows; ++r) {
    double mag = 0, err = 0;
    for (int i = 0; i < n; ++i) {
      mag = std::max(mag, (double)std::fabs(ref[(size_t)r * n + i]));
      err = std::max(err, (double)std::fabs(got[(size_t)r * n + i] - ref[(size_t)r * n + i]));
    }
    worst = std::max(worst, err / mag);
  }
  return worst;
}

std::vector<int> prompt(int n) {
  std::vector<int> t;
  for (int i = 0; i < n; ++i) t.push_back((i * 37 + 11) % 250 + 3);
  return t;
}

struct Fixture {
  TmpDir tmp;
  std::string path;
  std::unique_ptr<model::Model> model;
  quant::QuantTable table{detect_cpu()};
  ThreadPool pool{2};

  explicit Fixture(const std::string& arch, const std::string& extra = "") {
    path = tmp.file(arch + ".gguf");
    EXPECT_EQ(run(std::string(OSCAR_BIN_DIR) + "/oscar-mkmodel --arch " + arch +
                  " --preset tiny --type f32 --seed 5 " + extra + " -o " + path + " 2>/dev/null"),
              0);
    model = model::Model::load(path, table, Logger::quiet());
  }

  std::vector<float> reference(const std::vector<int>& tokens) {
    std::string cmd = std::string(OSCAR_PYTHON) + " " + OSCAR_SOURCE_DIR + "/tests/reference/gemma_ref.py " + path +
                      " " + tmp.file("ref.bin");
    for (int t : tokens) {
      cmd += ' ';  // appended separately: GCC 12 warns falsely (-Wrestrict) on " " + std::to_string(t)
      cmd += std::to_string(t);
    }
    EXPECT_EQ(run(cmd), 0);
    return read_floats(tmp.file("ref.bin"));
  }

  // Logits of every prompt position for each of n_seq sequences, the prompt
  // cut into batches of the given sizes (all sequences in every batch).
  std::vector<std::vector<float>> eval(const std::vector<int>& tokens, const std::vector<int>& cuts, int n_seq,
                                       bool fused = true, int slack = 512) {
    kv::KvCacheConfig kc;
    kc.type_k = kc.type_v = kv::CacheType::F32;
    kc.n_seq = n_seq;
    kc.n_ctx_seq = 64;
    kc.swa_slack = slack;
    kv::KvCache cache(model->config(), kc, table);
    runtime::ForwardOptions o;
    o.fused_attention = fused;
    runtime::Forward fwd(*model, cache, pool, o);
    const int V = model->config().n_vocab;
    std::vector<std::vector<float>> out((size_t)n_seq);
    int start = 0;
    for (int len : cuts) {
      std::vector<runtime::BatchToken> batch;
      for (int i = start; i < start + len; ++i)
        for (int s = 0; s < n_seq; ++s) batch.push_back({tokens[(size_t)i], s, i, true});
      const auto& logits = fwd.eval(batch);
      for (size_t b = 0; b < batch.size(); ++b) {
        auto& o2 = out[(size_t)batch[b].seq];
        o2.insert(o2.end(), logits.begin() + (long)b * V, logits.begin() + (long)(b + 1) * V);
      }
      start += len;
    }
    return out;
  }
};

class GemmaReference : public ::testing::TestWithParam<std::string> {};

TEST_P(GemmaReference, MatchesNumPyPastTheWindowInEveryBatching) {
  ASSERT_EQ(run(std::string(OSCAR_PYTHON) + " -c 'import numpy'"), 0) << "python3-numpy missing";
  Fixture f(GetParam());
  const auto& c = f.model->config();
  ASSERT_EQ(c.max_window(), 16);
  const std::vector<int> tokens = prompt(40);
  const int T = (int)tokens.size(), V = c.n_vocab;
  const std::vector<float> ref = f.reference(tokens);
  ASSERT_EQ(ref.size(), (size_t)T * V);

  const std::vector<std::vector<int>> batchings = {{T}, {7, 13, 20}, std::vector<int>((size_t)T, 1)};
  for (const auto& cuts : batchings) {
    EXPECT_LT(max_rel_err(f.eval(tokens, cuts, 1)[0], ref, T, V), 1e-4) << "batches=" << cuts.size();
    EXPECT_LT(max_rel_err(f.eval(tokens, cuts, 1, /*fused=*/false)[0], ref, T, V), 1e-4)
        << "reference attention, batches=" << cuts.size();
    EXPECT_LT(max_rel_err(f.eval(tokens, cuts, 1, true, /*slack=*/0)[0], ref, T, V), 1e-4)
        << "ring of exactly the window, batches=" << cuts.size();
  }
  auto two = f.eval(tokens, {5, 17, 18}, 2);
  EXPECT_LT(max_rel_err(two[0], ref, T, V), 1e-4) << "seq 0 of 2";
  EXPECT_LT(max_rel_err(two[1], ref, T, V), 1e-4) << "seq 1 of 2";
}

INSTANTIATE_TEST_SUITE_P(Archs, GemmaReference, ::testing::Values("gemma3", "gemma4"));

TEST(GemmaModel, Gemma4LayersAreWhatTheFileSays) {
  Fixture f("gemma4");
  const auto& c = f.model->config();
  ASSERT_EQ(c.n_layer, 6);
  for (int i = 0; i < 6; ++i) {
    const auto& l = c.layers[(size_t)i];
    const bool global = i == 2 || i == 5;
    EXPECT_EQ(l.sliding_window, global ? 0 : 16) << i;
    EXPECT_EQ(l.head_dim, global ? 64 : 32) << i;
    EXPECT_EQ(l.n_head_kv, global ? 1 : 2) << i;
    EXPECT_EQ(l.v_from_k, global && i == 2) << i;  // layer 5 shares layer 2's KV
    EXPECT_EQ(l.rope_freq_factors, global) << i;
    EXPECT_FLOAT_EQ(l.kq_scale(), 1.0f);
  }
  EXPECT_EQ(c.layers[4].kv_layer, 3);
  EXPECT_EQ(c.layers[5].kv_layer, 2);
  EXPECT_EQ(c.n_embd_per_layer, 16);
  EXPECT_FLOAT_EQ(c.final_logit_softcap, 30.0f);
  EXPECT_FLOAT_EQ(c.embd_scale, std::sqrt(128.0f));
}

TEST(GemmaModel, Gemma3LayersFollowThePeriodOfSix) {
  Fixture f("gemma3");
  const auto& c = f.model->config();
  for (int i = 0; i < 6; ++i) {
    const auto& l = c.layers[(size_t)i];
    EXPECT_EQ(l.sliding_window, i == 5 ? 0 : 16) << i;
    EXPECT_FLOAT_EQ(l.rope_base, i == 5 ? 1e6f : 1e4f) << i;
    EXPECT_FLOAT_EQ(l.rope_freq_scale, i == 5 ? 0.125f : 1.0f) << i;
    EXPECT_FLOAT_EQ(l.kq_scale(), 1.0f / std::sqrt(32.0f)) << i;
    EXPECT_TRUE(l.post_norms);
  }
}

// query_pre_attn_scalar is the head dim in every published Gemma 3 except
// the 27B (62 layers), where it is n_embd / n_head.
TEST(GemmaModel, Gemma3AttentionScaleFollowsThePublishedConfigs) {
  Fixture f("gemma3", "--layers 62 --embd 64 --ffn 64 --vocab 300");
  const auto& c = f.model->config();
  ASSERT_EQ(c.n_layer, 62);
  EXPECT_FLOAT_EQ(c.layers[0].kq_scale(), 1.0f / std::sqrt(64.0f / 4.0f));
  EXPECT_EQ(c.layers[59].sliding_window, 0);
  EXPECT_EQ(c.layers[60].sliding_window, 16);
}

// A sequence cut back within the ring's slack continues exactly; cut back
// further than the ring remembers, it is cleared (and says so).
TEST(GemmaModel, TruncationWithinTheRingContinuesExactly) {
  Fixture f("gemma4");
  const std::vector<int> tokens = prompt(40);
  const int V = f.model->config().n_vocab;
  const auto full = f.eval(tokens, {40}, 1)[0];
  for (int slack : {0, 8}) {
    kv::KvCacheConfig kc;
    kc.type_k = kc.type_v = kv::CacheType::F32;
    kc.n_ctx_seq = 64;
    kc.swa_slack = slack;
    kv::KvCache cache(f.model->config(), kc, f.table);
    runtime::Forward fwd(*f.model, cache, f.pool);
    std::vector<runtime::BatchToken> b;
    for (int i = 0; i < 40; ++i) b.push_back({tokens[(size_t)i], 0, i, false});
    fwd.eval(b);
    const int want = slack >= 5 ? 36 : 0;  // 4 positions back needs a slack of 4 + 1
    ASSERT_EQ(cache.truncate(0, 36), want) << "slack " << slack;
    b.clear();
    for (int i = want; i < 40; ++i) b.push_back({tokens[(size_t)i], 0, i, true});
    const auto& logits = fwd.eval(b);
    std::vector<float> last(logits.end() - V, logits.end()), ref(full.end() - V, full.end());
    EXPECT_LT(max_rel_err(last, ref, 1, V), 1e-5) << "slack " << slack;
  }
}

// Malformed or unsupported files get an Error that names the problem.
TEST(GemmaModel, BadFilesAreRefusedClearly) {
  TmpDir t;
  const quant::QuantTable table(detect_cpu());
  auto write = [&](const std::string& name, std::vector<gguf::KeyValue> kvs) {
    const std::string p = t.file(name);
    gguf::GgufWriter w(p);
    w.add_kv("general.architecture", gguf::Value::str("gemma4"));
    w.add_kv("gemma4.embedding_length", gguf::Value::u32(64));
    w.add_kv("gemma4.block_count", gguf::Value::u32(2));
    w.add_kv("gemma4.feed_forward_length", gguf::Value::u32(128));
    w.add_kv("gemma4.attention.head_count", gguf::Value::u32(2));
    for (auto& kv : kvs) w.add_kv(kv.key, std::move(kv.value));
    w.finish();
    return p;
  };
  auto error_of = [&](const std::string& p) -> std::string {
    try {
      model::Model::load(p, table, Logger::quiet());
    } catch (const Error& e) {
      return e.what();
    }
    return "";
  };
  EXPECT_NE(error_of(write("moe.gguf", {{"gemma4.expert_count", gguf::Value::u32(8)}})).find("mixture-of-experts"),
            std::string::npos);
  EXPECT_NE(error_of(write("pattern.gguf", {{"gemma4.attention.sliding_window_pattern",
                                             gguf::Value::array(gguf::ValueType::BOOL, {gguf::Value::boolean(true)})}}))
                .find("sliding_window_pattern"),
            std::string::npos);
  EXPECT_NE(error_of(write("shared.gguf", {{"gemma4.attention.shared_kv_layers", gguf::Value::u32(2)}}))
                .find("shared_kv_layers"),
            std::string::npos);
  EXPECT_NE(error_of(write("nowindow.gguf", {{"gemma4.attention.sliding_window_pattern",
                                              gguf::Value::array(gguf::ValueType::BOOL,
                                                                 {gguf::Value::boolean(true), gguf::Value::boolean(false)})}}))
                .find("sliding_window"),
            std::string::npos);
}

// Rotations leave the logits unchanged on every layer, whatever its head
// dim (32 and 64 here), shared-KV layers using their source's rotation.
TEST(GemmaRotations, RandomRotationsLeaveLogitsUnchanged) {
  for (const char* arch : {"gemma3", "gemma4"}) {
    Fixture plain(arch), rotated(arch, "--kv-rot random");
    const auto& c = rotated.model->config();
    for (int i = 0; i < c.n_layer; ++i)
      EXPECT_EQ(rotated.model->weights().layers[(size_t)i].k_rot.size(),
                (size_t)c.layers[(size_t)i].head_dim * c.layers[(size_t)i].head_dim);
    const std::vector<int> tokens = prompt(30);
    const int V = c.n_vocab;
    const auto want = plain.eval(tokens, {10, 1, 1, 18}, 1)[0];
    for (bool fused : {true, false})
      EXPECT_LT(max_rel_err(rotated.eval(tokens, {10, 1, 1, 18}, 1, fused)[0], want, 30, V), 1e-4)
          << arch << (fused ? " fused" : " reference");
  }
}

// The data-free Hadamard mode over a q2_0 cache runs on mixed head dims:
// global layers in q2_0 tiers, sliding layers in f16 rings.
TEST(GemmaRotations, Q2CacheWithHadamardRuns) {
  Fixture f("gemma4");
  kv::KvCacheConfig kc;
  kc.type_k = kc.type_v = kv::CacheType::Q2_0;
  kc.n_ctx_seq = 64;
  kc.hp_sink = 2;
  kc.hp_recent = 4;
  kv::KvCache cache(f.model->config(), kc, f.table);
  EXPECT_NE(cache.describe().find("sliding-window layers K f16 / V f16"), std::string::npos) << cache.describe();
  EXPECT_EQ(cache.k_store(0).main_codec().type(), kv::CacheType::F16);
  EXPECT_EQ(cache.k_store(2).main_codec().type(), kv::CacheType::Q2_0);
  EXPECT_EQ(&cache.k_store(5), &cache.k_store(2));  // shared
  const auto plan = runtime::RotationPlan::make(*f.model, /*q2_cache=*/true, /*no_hadamard=*/false);
  ASSERT_EQ(plan.mode, runtime::RotationMode::Hadamard);
  runtime::ForwardOptions o;
  o.rotations = &plan;
  runtime::Forward fwd(*f.model, cache, f.pool, o);
  const std::vector<int> tokens = prompt(40);
  std::vector<runtime::BatchToken> b;
  for (int i = 0; i < 40; ++i) b.push_back({tokens[(size_t)i], 0, i, i == 39});
  const auto& logits = fwd.eval(b);
  ASSERT_EQ(logits.size(), (size_t)f.model->config().n_vocab);
  for (float x : logits) ASSERT_TRUE(std::isfinite(x));
  const auto u = cache.usage(0);
  EXPECT_EQ(u.sink_cells + u.main_cells + u.recent_cells, 40);  // the one global layer with a store of its own
  EXPECT_EQ(u.main_cells, 40 - 2 - 4);
  EXPECT_EQ(u.ring_cells, 3 * 40);  // three sliding layers, rings of 16 + 512 (all 40 still held)
  EXPECT_NEAR(u.main_bits_per_value, 8.0 * (64 / 4 + 4) / 64, 1e-9);  // q2_0 at d = 64
}

// Calibration's hook sees every layer, shared-KV layers included (with the
// rows of the layer they read), before any rotation.
TEST(GemmaRotations, ObserverSeesEveryLayerBeforeRotation) {
  struct Rec : runtime::LayerObserver {
    std::vector<std::vector<float>> k, q;
    void on_qkv(int layer, const model::LayerConfig& l, int n, const int32_t*, const int32_t*, const float* qp,
                const float* kp, const float* vp) override {
      ASSERT_NE(vp, nullptr);
      if ((int)k.size() <= layer) k.resize((size_t)layer + 1), q.resize((size_t)layer + 1);
      k[(size_t)layer].assign(kp, kp + (size_t)n * l.n_head_kv * l.head_dim);
      q[(size_t)layer].assign(qp, qp + (size_t)n * l.n_head * l.head_dim);
    }
  };
  Fixture plain("gemma4"), rotated("gemma4", "--kv-rot random");
  Rec a, b;
  for (auto [fx, rec] : {std::pair{&plain, &a}, std::pair{&rotated, &b}}) {
    kv::KvCacheConfig kc;
    kc.type_k = kc.type_v = kv::CacheType::F32;
    kc.n_ctx_seq = 64;
    kv::KvCache cache(fx->model->config(), kc, fx->table);
    runtime::ForwardOptions o;
    o.observer = rec;
    runtime::Forward fwd(*fx->model, cache, fx->pool, o);
    const std::vector<int> tokens = prompt(20);
    std::vector<runtime::BatchToken> batch;
    for (int i = 0; i < 20; ++i) batch.push_back({tokens[(size_t)i], 0, i, false});
    fwd.eval(batch);
  }
  ASSERT_EQ(a.k.size(), 6u);
  // Equal up to the rounding the rotations add to earlier layers' outputs.
  for (int il = 0; il < 6; ++il) {
    EXPECT_LT(max_rel_err(b.k[(size_t)il], a.k[(size_t)il], 1, (int)a.k[(size_t)il].size()), 1e-4) << il;
    EXPECT_LT(max_rel_err(b.q[(size_t)il], a.q[(size_t)il], 1, (int)a.q[(size_t)il].size()), 1e-4) << il;
  }
  EXPECT_EQ(a.k[4], a.k[3]);  // layer 4 reads layer 3's KV
  EXPECT_EQ(a.k[5], a.k[2]);
}

}  // namespace
}  // namespace oscar
