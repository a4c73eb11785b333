// OSCAR rotations: q.k and softmax.V are invariant under an orthogonal
// rotation of Q, K (same matrix) and V (undone on the output), so a model with
// rotation tensors gives the logits of the same model without them when the
// cache is exact enough; malformed rotations are refused at load; the
// rotation mode follows docs/OSCAR.md §1 ("Which rotation a run uses").
#include <gtest/gtest.h>

#include <cmath>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <random>
#include <vector>

#include "core/error.h"
#include "core/log.h"
#include "gguf/gguf_writer.h"
#include "model/rotation_math.h"
#include "runtime/forward.h"

#include "common/tmp_dir.h"

namespace oscar {
namespace {

using test::TmpDir;
using test::mkmodel;

namespace fs = std::filesystem;

// A qwen3-4b-shaped model (36 layers, head dim 128) of small width.
const std::string kShape = "--arch qwen3 --preset tiny --layers 36 --head-dim 128 --embd 256 --heads 4 --kv-heads 1 --ffn 256 --type f32 --seed 11";

std::vector<float> run(const std::string& path, kv::CacheType type, bool fused, const runtime::RotationPlan* plan_override = nullptr) {
  const quant::QuantTable table(detect_cpu());
  auto m = model::Model::load(path, table, Logger::quiet());
  kv::KvCacheConfig kc;
  kc.type_k = kc.type_v = type;
  kc.n_ctx_seq = 64;
  kv::KvCache cache(m->config(), kc, table);
  ThreadPool pool(2);
  runtime::ForwardOptions o;
  o.fused_attention = fused;
  o.rotations = plan_override;
  runtime::Forward fwd(*m, cache, pool, o);
  std::vector<float> out;
  const int toks[] = {3, 17, 99, 4, 250, 31, 7, 64, 12, 5, 200, 77};
  // Half the prompt as one batch, the rest token by token, so cached rows are read.
  std::vector<runtime::BatchToken> b;
  for (int i = 0; i < 6; ++i) b.push_back({toks[i], 0, i, true});
  auto l = fwd.eval(b);
  out.insert(out.end(), l.begin(), l.end());
  for (int i = 6; i < 12; ++i) {
    auto x = fwd.eval({{toks[i], 0, i, true}});
    out.insert(out.end(), x.begin(), x.end());
  }
  return out;
}

double rel_err(const std::vector<float>& a, const std::vector<float>& b) {
  double err = 0, mag = 0;
  for (size_t i = 0; i < a.size(); ++i) {
    err = std::max(err, (double)std::fabs(a[i] - b[i]));
    mag = std::max(mag, (double)std::fabs(b[i]));
  }
  return err / mag;
}

void check_invariance(const std::string& rot_source) {
  TmpDir t;
  ASSERT_EQ(mkmodel(kShape + " -o " + t.file("plain.gguf")), 0);
  ASSERT_EQ(mkmodel(kShape + " --kv-rot " + rot_source + " -o " + t.file("rot.gguf")), 0);
  for (bool fused : {true, false}) {
    const auto a = run(t.file("plain.gguf"), kv::CacheType::F32, fused);
    const auto b = run(t.file("rot.gguf"), kv::CacheType::F32, fused);
    EXPECT_LT(rel_err(b, a), 1e-4) << rot_source << " f32 cache, fused=" << fused;
    const auto c = run(t.file("plain.gguf"), kv::CacheType::F16, fused);
    const auto d = run(t.file("rot.gguf"), kv::CacheType::F16, fused);
    EXPECT_LT(rel_err(d, c), 2e-3) << rot_source << " f16 cache, fused=" << fused;
  }
}

TEST(Rotations, RealQwen3RotationsLeaveLogitsUnchanged) {
  const std::string dir = std::string(OSCAR_TEST_DATA) + "/rotations/qwen3-4b-thinking-2507";
  if (!fs::exists(dir)) GTEST_SKIP() << "test data absent (see testdata/README.md): " << dir;
  check_invariance(dir);
}

TEST(Rotations, RandomAndHadamardRotationsLeaveLogitsUnchanged) {
  check_invariance("random");
  check_invariance("hadamard");
}

// The fast transform the data-free mode uses against the dense matrix.
TEST(Rotations, HadamardTransformEqualsTheHadamardMatrix) {
  std::mt19937 rng(4);
  std::normal_distribution<float> nd(0, 1);
  // 16 is the smallest size that takes the unrolled short stages.
  for (int d : {1, 2, 4, 8, 16, 32, 64, 128, 256, 512}) {
    const std::vector<float> h = model::hadamard_matrix(d);
    std::vector<float> x((size_t)d), want((size_t)d);
    for (auto& v : x) v = nd(rng);
    model::rotate(h.data(), x.data(), want.data(), d);
    std::vector<float> y = x;
    model::hadamard_transform(y.data(), d);
    for (int i = 0; i < d; ++i) ASSERT_NEAR(y[(size_t)i], want[(size_t)i], 1e-5f * std::sqrt((float)d)) << d << " " << i;
    model::hadamard_transform(y.data(), d);  // its own inverse
    for (int i = 0; i < d; ++i) ASSERT_NEAR(y[(size_t)i], x[(size_t)i], 1e-5f * std::sqrt((float)d)) << d << " " << i;
  }
}

TEST(Rotations, ModeFollowsTheDesign) {
  TmpDir t;
  ASSERT_EQ(mkmodel("--preset tiny --head-dim 32 -o " + t.file("p.gguf")), 0);
  ASSERT_EQ(mkmodel("--preset tiny --head-dim 32 --kv-rot random -o " + t.file("r.gguf")), 0);
  const quant::QuantTable table(detect_cpu());
  auto plain = model::Model::load(t.file("p.gguf"), table, Logger::quiet());
  auto rot = model::Model::load(t.file("r.gguf"), table, Logger::quiet());
  EXPECT_EQ(runtime::RotationPlan::make(*plain, false, false).mode, runtime::RotationMode::None);
  EXPECT_EQ(runtime::RotationPlan::make(*plain, true, false).mode, runtime::RotationMode::Hadamard);
  EXPECT_EQ(runtime::RotationPlan::make(*plain, true, true).mode, runtime::RotationMode::None);
  auto calibrated = runtime::RotationPlan::make(*rot, true, false);
  EXPECT_EQ(calibrated.mode, runtime::RotationMode::Calibrated);
  // The file's rotations are used as they are: never the Hadamard again.
  EXPECT_EQ(calibrated.k[0], rot->weights().layers[0].k_rot.data());
  // Data-free Hadamard mode with a q2_0 cache runs and stays close to the
  // unrotated f32 result on this tiny model (a sanity bound, not a quality claim).
  auto h = runtime::RotationPlan::make(*plain, true, false);
  const auto a = run(t.file("p.gguf"), kv::CacheType::F32, true);
  const auto b = run(t.file("p.gguf"), kv::CacheType::F32, true, &h);
  EXPECT_LT(rel_err(b, a), 1e-4) << "Hadamard is a rotation too: exact cache, same logits";
}

// Copies `src` adding one rotation tensor of the given shape and values.
void write_with_rotation(const std::string& src, const std::string& dst, uint64_t d0, uint64_t d1,
                         const std::vector<float>& values, TensorType type = TensorType::F32) {
  auto in = gguf::GgufFile::open(src);
  gguf::GgufWriter w(dst);
  w.add_metadata_from(in);
  w.add_tensors_from(in);
  w.add_tensor("blk.0.attn_k_rot.weight", type, {d0, d1});
  for (const auto& ti : in.tensors()) w.write_tensor(ti.name, in.tensor_data(ti));
  std::vector<uint8_t> bytes(values.size() * 4);
  std::memcpy(bytes.data(), values.data(), bytes.size());
  if (type == TensorType::F16) bytes.resize(values.size() * 2);
  w.write_tensor("blk.0.attn_k_rot.weight", bytes);
  w.finish();
}

TEST(Rotations, MalformedRotationTensorsAreRefused) {
  TmpDir t;
  ASSERT_EQ(mkmodel("--preset tiny --head-dim 32 -o " + t.file("p.gguf")), 0);
  const quant::QuantTable table(detect_cpu());
  auto expect_refused = [&](const std::string& f, const std::string& fragment) {
    try {
      model::Model::load(f, table, Logger::quiet());
      ADD_FAILURE() << "loaded " << f;
    } catch (const Error& e) {
      EXPECT_NE(std::string(e.what()).find(fragment), std::string::npos) << e.what();
    }
  };
  std::vector<float> scaled(32 * 32, 0.0f);
  for (int i = 0; i < 32; ++i) scaled[i * 32 + i] = 1.01f;  // not orthogonal
  write_with_rotation(t.file("p.gguf"), t.file("bad1.gguf"), 32, 32, scaled);
  expect_refused(t.file("bad1.gguf"), "not orthogonal");
  std::vector<float> wrong(16 * 16, 0.0f);
  for (int i = 0; i < 16; ++i) wrong[i * 16 + i] = 1.0f;
  write_with_rotation(t.file("p.gguf"), t.file("bad2.gguf"), 16, 16, wrong);
  expect_refused(t.file("bad2.gguf"), "expected [32, 32]");
  std::vector<float> eye(32 * 32, 0.0f);
  for (int i = 0; i < 32; ++i) eye[i * 32 + i] = 1.0f;
  write_with_rotation(t.file("p.gguf"), t.file("bad3.gguf"), 32, 32, eye, TensorType::F16);
  expect_refused(t.file("bad3.gguf"), "must be f32");
  write_with_rotation(t.file("p.gguf"), t.file("ok.gguf"), 32, 32, eye);
  EXPECT_NO_THROW(model::Model::load(t.file("ok.gguf"), table, Logger::quiet()));
}

// Calibration measures Q, K, V before any rotation: the observer must see the
// same rows whether or not the model carries rotation tensors, once per layer.
struct Recorder : runtime::LayerObserver {
  std::vector<float> rows;
  int calls = 0;
  void on_qkv(int, const model::LayerConfig& l, int n, const int32_t*, const int32_t*, const float* q,
              const float* k, const float* v) override {
    ++calls;
    const size_t qw = (size_t)n * l.n_head * l.head_dim, kvw = (size_t)n * l.n_head_kv * l.head_dim;
    rows.insert(rows.end(), q, q + qw);
    rows.insert(rows.end(), k, k + kvw);
    rows.insert(rows.end(), v, v + kvw);
  }
};

Recorder observe(const std::string& path) {
  const quant::QuantTable table(detect_cpu());
  auto m = model::Model::load(path, table, Logger::quiet());
  kv::KvCacheConfig kc;
  kc.type_k = kc.type_v = kv::CacheType::F32;
  kc.n_ctx_seq = 16;
  kv::KvCache cache(m->config(), kc, table);
  ThreadPool pool(1);
  Recorder rec;
  runtime::ForwardOptions o;
  o.observer = &rec;
  runtime::Forward fwd(*m, cache, pool, o);
  fwd.eval({{3, 0, 0, false}, {17, 0, 1, false}, {99, 0, 2, true}});
  fwd.eval({{4, 0, 3, true}});
  return rec;
}

TEST(Rotations, ObserverSeesRowsBeforeRotation) {
  TmpDir t;
  ASSERT_EQ(mkmodel(kShape + " -o " + t.file("plain.gguf")), 0);
  ASSERT_EQ(mkmodel(kShape + " --kv-rot random -o " + t.file("rot.gguf")), 0);
  const Recorder a = observe(t.file("plain.gguf")), b = observe(t.file("rot.gguf"));
  EXPECT_EQ(a.calls, 2 * 36);
  EXPECT_EQ(b.calls, 2 * 36);
  ASSERT_EQ(a.rows.size(), b.rows.size());
  EXPECT_LT(rel_err(b.rows, a.rows), 1e-6);
}

}  // namespace
}  // namespace oscar
