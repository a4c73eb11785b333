// A whole forward pass on the scalar kernel table against the one this CPU
// picks, side by side in one process: a model loaded with
// QuantTable(CpuFeatures{}) runs every kernel the table decides (weight
// dots, the KV codecs, attention) on scalar code; with QuantTable(detect_cpu())
// on the widest SIMD the CPU has. Their logits agree to float rounding over
// a prompt (prompt tiles, batch rows) and decode steps (cached rows), for an
// f16 and a q2_0 cache.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <string>
#include <vector>

#include "attention/attention_kernels.h"
#include "core/log.h"
#include "runtime/forward.h"

#include "common/tmp_dir.h"

namespace oscar {
namespace {

using test::mkmodel;
using test::TmpDir;

// A 40-token prompt in batches of 20, then 6 decode steps; every eval's logits.
std::vector<float> run(const model::Model& m, const quant::QuantTable& table, kv::CacheType type) {
  kv::KvCacheConfig kc;
  kc.n_ctx_seq = 64;
  kc.type_k = kc.type_v = type;
  if (type == kv::CacheType::Q2_0) kc.hp_sink = 4, kc.hp_recent = 8;
  kv::KvCache cache(m.config(), kc, table);
  ThreadPool pool(2);
  runtime::Forward fwd(m, cache, pool);
  std::vector<float> out;
  for (int b0 = 0; b0 < 40; b0 += 20) {
    std::vector<runtime::BatchToken> batch;
    for (int i = b0; i < b0 + 20; ++i) batch.push_back({(5 + 13 * i) % 200, 0, i, i == b0 + 19});
    const std::vector<float>& l = fwd.eval(batch);
    out.insert(out.end(), l.begin(), l.end());
  }
  for (int i = 40; i < 46; ++i) {
    const std::vector<float>& l = fwd.eval({{(7 * i) % 200, 0, i, true}});
    out.insert(out.end(), l.begin(), l.end());
  }
  return out;
}

TEST(ForwardIsas, ScalarTableMatchesTheCpusTable) {
  const CpuFeatures cpu = detect_cpu();
  const quant::QuantTable scalar{CpuFeatures{}}, best{cpu};
  EXPECT_STREQ(attention::AttentionKernels(scalar.cpu()).name, "scalar");
  if (!cpu.has_avx2_family() && !cpu.neon) GTEST_SKIP() << "no SIMD kernels on this CPU: one table only";
  TmpDir t("forward-isas");
  // Head dim 128: the q2_0 cache rows take the SIMD and integer kernels.
  for (const char* type : {"f16", "q4_k_m"}) {
    const std::string path = t.file(std::string("m-") + type + ".gguf");
    ASSERT_EQ(mkmodel(std::string("--preset tiny --layers 2 --embd 256 --heads 4 --kv-heads 2 --head-dim 128 "
                                  "--ffn 512 --vocab 320 --seed 3 --type ") +
                      type + " -o " + path),
              0);
    auto m_scalar = model::Model::load(path, scalar, Logger::quiet());
    auto m_best = model::Model::load(path, best, Logger::quiet());
    for (kv::CacheType cache : {kv::CacheType::F16, kv::CacheType::Q2_0}) {
      const std::vector<float> a = run(*m_scalar, scalar, cache), b = run(*m_best, best, cache);
      ASSERT_EQ(a.size(), b.size());
      double worst = 0, norm = 0;
      for (size_t i = 0; i < a.size(); ++i) {
        worst = std::max(worst, (double)std::fabs(a[i] - b[i]));
        norm = std::max(norm, (double)std::fabs(b[i]));
      }
      EXPECT_GT(norm, 0.0);
      // f16 weights: only summation order differs (measured up to 1.2e-4 of
      // the largest logit, x86 and NEON). q4_k_m: activations are rounded to
      // 8 bits before the weight dots, and a last-bit difference upstream
      // can put one on the other side of a step; such a flip moved the
      // logits by 0.85% of the largest (AVX-512, f16 cache) and 0.46% (NEON,
      // q2_0 cache), the other cache within 1e-6. Held to 2%.
      const double tol = std::string(type) == "f16" ? 1e-3 : 2e-2;
      EXPECT_LE(worst, tol * norm) << type << " weights, " << kv::cache_type_name(cache) << " cache";
      std::printf("%s weights, %s cache: max |scalar - %s| = %.3g of max |logit| %.3g\n", type,
                  kv::cache_type_name(cache), attention::AttentionKernels(cpu).name, worst, norm);
    }
  }
}

}  // namespace
}  // namespace oscar
