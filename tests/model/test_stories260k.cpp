// A really trained model: greedy decoding of stories260K from BOS must
// reproduce the continuation given in testdata/README.md, through the
// llama path (normal RoPE, GQA), the SPM tokenizer and the sampler.
#include <gtest/gtest.h>

#include <filesystem>

#include "core/log.h"
#include "runtime/forward.h"
#include "sampling/sampler.h"
#include "tokenizer/tokenizer.h"

namespace oscar {
namespace {

TEST(Stories260K, GreedyFromBosReproducesReference) {
  const std::string path = std::string(OSCAR_TEST_DATA) + "/models/stories260K.gguf";
  if (!std::filesystem::exists(path)) GTEST_SKIP() << "test data absent (see testdata/README.md): " << path;
  const quant::QuantTable table(detect_cpu());
  auto model = model::Model::load(path, table, Logger::quiet());
  EXPECT_EQ(model->config().arch, "llama");
  EXPECT_EQ(model->config().layers[0].head_dim, 8);
  const tok::Tokenizer tokenizer = tok::Tokenizer::from_metadata(model->file().metadata());
  for (kv::CacheType kv_type : {kv::CacheType::F32, kv::CacheType::F16}) {
    kv::KvCacheConfig kc;
    kc.type_k = kc.type_v = kv_type;
    kc.n_ctx_seq = 128;
    kv::KvCache cache(model->config(), kc, table);
    ThreadPool pool(2);
    runtime::Forward fwd(*model, cache, pool);
    sampling::SamplerSettings ss;
    ss.temperature = 0;
    sampling::Sampler sampler(ss);
    std::vector<tok::TokenId> out;
    tok::TokenId t = tokenizer.vocab().bos();
    for (int pos = 0; pos < 40; ++pos) {
      const auto& logits = fwd.eval({{t, 0, pos, true}});
      t = sampler.sample(logits.data(), model->config().n_vocab);
      out.push_back(t);
    }
    // Pieces concatenated keep the leading space of "▁Once", as in the
    // reference text (detokenize() would strip it like llama.cpp does).
    std::string text;
    for (tok::TokenId id : out) text += tokenizer.token_to_piece(id);
    EXPECT_EQ(text.rfind(" Once upon a time, there was a little girl named Lily. She loved to play outside in the park.", 0), 0u)
        << kv::cache_type_name(kv_type) << ": " << text;
  }
}

}  // namespace
}  // namespace oscar
