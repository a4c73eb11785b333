// The engine's logits against the independent NumPy reference
// (tests/reference/transformer_ref.py) for tiny random qwen3, llama and qwen2
// models written by oscar-mkmodel with F32 weights and an f32 KV cache:
// the prompt in one batch, in several batches, token by token, and as two
// sequences interleaved in the same batches.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include <cstring>

#include "core/error.h"
#include "runtime/forward.h"

namespace oscar {
namespace {

namespace fs = std::filesystem;

std::string tmp_dir() {
  auto d = fs::temp_directory_path() / ("oscar-test-fwd-" + std::to_string(::getpid()));
  fs::create_directories(d);
  return d.string();
}

int run(const std::string& cmd) { return std::system(cmd.c_str()); }

std::vector<float> read_floats(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  std::vector<char> bytes((std::istreambuf_iterator<char>(f)), {});
  std::vector<float> v(bytes.size() / 4);
  std::memcpy(v.data(), bytes.data(), v.size() * 4);
  return v;
}

// Max over rows of max|a - b| / max|ref row|.
double max_rel_err(const float* got, const float* ref, int rows, int n) {
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

class ForwardReference : public ::testing::TestWithParam<std::string> {};

TEST_P(ForwardReference, MatchesNumPyInEveryBatching) {
  // numpy comes from the setup script; its absence is a broken setup, not a skip.
  ASSERT_EQ(run(std::string(OSCAR_PYTHON) + " -c 'import numpy'"), 0) << "python3-numpy missing";
  const std::string arch = GetParam();
  const std::string dir = tmp_dir();
  const std::string model_path = dir + "/" + arch + ".gguf";
  ASSERT_EQ(run(std::string(OSCAR_BIN_DIR) + "/oscar-mkmodel --arch " + arch +
                " --preset tiny --type f32 --seed 7 -o " + model_path + " 2>/dev/null"),
            0);
  const std::vector<int> tokens = {5, 71, 250, 3, 99, 101, 17, 42, 8, 200, 64, 33, 1, 150};
  const int T = (int)tokens.size();
  std::string cmd = std::string(OSCAR_PYTHON) + " " + std::string(OSCAR_SOURCE_DIR) + "/tests/reference/transformer_ref.py " +
                    model_path + " " + dir + "/ref.bin";
  for (int t : tokens) cmd += " " + std::to_string(t);
  ASSERT_EQ(run(cmd), 0);
  const std::vector<float> ref = read_floats(dir + "/ref.bin");

  const quant::QuantTable table(detect_cpu());
  auto model = model::Model::load(model_path, table, Logger::quiet());
  const int V = model->config().n_vocab;
  ASSERT_EQ(ref.size(), (size_t)T * V);
  ThreadPool pool(2);

  // Evaluates the prompt for `n_seq` sequences, cutting it into batches of the
  // given sizes; with two sequences both go into every batch, interleaved.
  auto eval = [&](const std::vector<int>& cuts, int n_seq) {
    kv::KvCacheConfig kc;
    kc.type_k = kc.type_v = kv::CacheType::F32;
    kc.n_seq = n_seq;
    kc.n_ctx_seq = 64;
    kv::KvCache cache(model->config(), kc, table);
    runtime::Forward fwd(*model, cache, pool);
    std::vector<std::vector<float>> out((size_t)n_seq);
    int start = 0;
    for (int len : cuts) {
      std::vector<runtime::BatchToken> batch;
      for (int i = start; i < start + len; ++i)
        for (int s = 0; s < n_seq; ++s) batch.push_back({tokens[(size_t)i], s, i, true});
      const auto& logits = fwd.eval(batch);
      for (size_t b = 0; b < batch.size(); ++b)
        out[(size_t)batch[b].seq].insert(out[(size_t)batch[b].seq].end(), logits.begin() + (long)b * V,
                                         logits.begin() + (long)(b + 1) * V);
      start += len;
    }
    return out;
  };

  const std::vector<std::vector<int>> batchings = {{T}, {3, 5, 6}, std::vector<int>((size_t)T, 1)};
  for (const auto& cuts : batchings) {
    auto got = eval(cuts, 1);
    EXPECT_LT(max_rel_err(got[0].data(), ref.data(), T, V), 1e-4) << arch << " batches=" << cuts.size();
  }
  auto two = eval({4, 10}, 2);
  EXPECT_LT(max_rel_err(two[0].data(), ref.data(), T, V), 1e-4) << arch << " seq 0 of 2";
  EXPECT_LT(max_rel_err(two[1].data(), ref.data(), T, V), 1e-4) << arch << " seq 1 of 2";
  fs::remove_all(dir);
}

INSTANTIATE_TEST_SUITE_P(Archs, ForwardReference, ::testing::Values("qwen3", "llama", "qwen2"));

TEST(Forward, RejectsBadBatchesWithoutTouchingTheCache) {
  const std::string dir = tmp_dir();
  const std::string model_path = dir + "/q.gguf";
  ASSERT_EQ(run(std::string(OSCAR_BIN_DIR) + "/oscar-mkmodel --arch qwen3 --preset tiny --type f32 -o " +
                model_path + " 2>/dev/null"),
            0);
  const quant::QuantTable table(detect_cpu());
  auto model = model::Model::load(model_path, table, Logger::quiet());
  kv::KvCacheConfig kc;
  kc.n_ctx_seq = 4;
  kv::KvCache cache(model->config(), kc, table);
  ThreadPool pool(1);
  runtime::Forward fwd(*model, cache, pool);
  EXPECT_THROW(fwd.eval({{model->config().n_vocab, 0, 0, true}}), Error);  // token out of range
  EXPECT_THROW(fwd.eval({{1, 1, 0, true}}), Error);                         // no sequence 1
  EXPECT_THROW(fwd.eval({{1, 0, 1, true}}), Error);                         // gap in positions
  EXPECT_EQ(cache.n_pos(0), 0);
  fwd.eval({{1, 0, 0, false}, {2, 0, 1, false}, {3, 0, 2, false}, {4, 0, 3, true}});
  EXPECT_EQ(cache.n_pos(0), 4);
  EXPECT_THROW(fwd.eval({{1, 0, 4, true}}), Error);  // context full
  cache.truncate(0, 2);
  EXPECT_NO_THROW(fwd.eval({{1, 0, 2, true}}));
  fs::remove_all(dir);
}

// A loaded q4_k_m model has its Q4_K and Q6_K matrices repacked 16 rows at
// a time where the CPU has the kernels (model_loader.cpp), the tied output
// table included, whose embedding lookups then unpack a row; the same file
// mapped is never written. Both must give the same logits, prompt and decode.
TEST(Forward, RepackedWeightsGiveTheSameLogits) {
  const quant::QuantTable table(detect_cpu());
  if (!table.rows16(TensorType::Q4_K)) GTEST_SKIP() << "no rows16 kernel on this CPU: nothing is repacked";
  const std::string dir = tmp_dir();
  const std::string model_path = dir + "/q4.gguf";
  // --tied --vocab 304: the Q6_K token table is the output, 19 groups of 16.
  ASSERT_EQ(run(std::string(OSCAR_BIN_DIR) + "/oscar-mkmodel --arch qwen3 --preset tiny --embd 256 --ffn 512 " +
                "--vocab 304 --tied --type q4_k_m -o " + model_path + " 2>/dev/null"),
            0);
  auto loaded = model::Model::load(model_path, table, Logger::quiet(), FileResidence::kLoaded);
  auto mapped = model::Model::load(model_path, table, Logger::quiet(), FileResidence::kMapped);
  ASSERT_EQ(loaded->file().residence(), FileResidence::kLoaded);
  // Repacked: Q4_K layer matrices, Q6_K ones (some layers' V and down) and
  // the tied output, whose lookups go through the same rows16 view.
  const model::ModelWeights& lw = loaded->weights();
  int n_q4 = 0, n_q6 = 0;
  for (const auto& l : lw.layers)
    for (const kernels::WeightMatrix* m : {&l.wq, &l.wv, &l.ffn_gate, &l.ffn_down})
      if (m->rows16) (m->traits->type == TensorType::Q4_K ? n_q4 : n_q6) += 1;
  EXPECT_GT(n_q4, 0);
  EXPECT_GT(n_q6, 0);
  ASSERT_EQ(lw.output.data, lw.tok_embd.data);
  EXPECT_EQ(lw.output.traits->type, TensorType::Q6_K);
  EXPECT_NE(lw.output.rows16, nullptr);
  EXPECT_EQ(lw.tok_embd.rows16, lw.output.rows16);
  for (const auto& l : mapped->weights().layers) EXPECT_EQ(l.wq.rows16, nullptr);
  EXPECT_EQ(mapped->weights().tok_embd.rows16, nullptr);
  // A CPU with AVX2 only repacks Q4_K and leaves Q6_K (the output too) as
  // it is: the same model loaded with that CPU's kernels.
  CpuFeatures avx2 = detect_cpu();
  avx2.avx512f = avx2.avx512bw = avx2.avx512vl = avx2.avx512dq = avx2.avx512vnni = avx2.avx512vbmi = false;
  const quant::QuantTable table_avx2(avx2);
  std::unique_ptr<model::Model> loaded_avx2;
  if (avx2.has_avx2_family()) {
    loaded_avx2 = model::Model::load(model_path, table_avx2, Logger::quiet(), FileResidence::kLoaded);
    const model::ModelWeights& aw = loaded_avx2->weights();
    EXPECT_NE(aw.layers[0].wq.rows16, nullptr);
    EXPECT_EQ(aw.output.rows16, nullptr);
    EXPECT_EQ(aw.tok_embd.rows16, nullptr);
  }
  const model::Model* models[3] = {mapped.get(), loaded.get(), loaded_avx2.get()};
  const quant::QuantTable* tables[3] = {&table, &table, &table_avx2};
  std::vector<std::vector<float>> logits[3];
  for (int which = 0; which < 3 && models[which]; ++which) {
    const model::Model& m = *models[which];
    kv::KvCacheConfig kc;
    kc.n_ctx_seq = 16;
    kv::KvCache cache(m.config(), kc, *tables[which]);
    ThreadPool pool(2);
    runtime::Forward fwd(m, cache, pool);
    std::vector<runtime::BatchToken> prompt;
    for (int i = 0; i < 9; ++i) prompt.push_back({(i * 37 + 5) % m.config().n_vocab, 0, i, true});
    logits[which].push_back(fwd.eval(prompt));
    for (int i = 9; i < 12; ++i) logits[which].push_back(fwd.eval({{(i * 11) % m.config().n_vocab, 0, i, true}}));
  }
  const int n_vocab = loaded->config().n_vocab;
  for (int which = 1; which < 3; ++which)
    for (size_t s = 0; s < logits[which].size(); ++s) {
      const int rows = (int)(logits[0][s].size() / (size_t)n_vocab);
      EXPECT_LT(max_rel_err(logits[which][s].data(), logits[0][s].data(), rows, n_vocab), 1e-4)
          << (which == 1 ? "repacked" : "repacked for AVX2") << " step " << s;
    }
  fs::remove_all(dir);
}

}  // namespace
}  // namespace oscar
