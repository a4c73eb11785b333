// oscar-perplexity on a real trained model (stories260K from testdata/; the
// test skips itself with a message when the data is absent).
#include "ppl_test_util.h"

namespace {

using namespace ppl_test;
using PerplexityShared = PerplexityTool;

// The real trained model on a story text: PPL far below the 512 of a uniform
// guess, the same as NumPy's, and an f16 cache close to f32 (its head dim of
// 8 is too small for the block-quantized cache types).
TEST_F(PerplexityShared, Stories260KOnAStory) {
  const std::string m = std::string(OSCAR_TEST_DATA) + "/models/stories260K.gguf";
  if (!fs::exists(m)) GTEST_SKIP() << "test data absent (see testdata/README.md): " << m;
  const std::string base = path("stories.kld");
  const Result r = ppl("-m " + m + " -f " + kStories + " -c 256 -ctk f32 -ctv f32 --kl-divergence-type f32 "
                       "--kl-divergence-base " + base);
  ASSERT_EQ(r.rc, 0) << r.err;
  const double p = final_ppl(r);
  EXPECT_GT(p, 1.0);
  EXPECT_LT(p, 20.0) << r.out;
  const Result ref = sh(std::string(OSCAR_PYTHON) + " " + kRefScript + " " + m + " " + base);
  ASSERT_EQ(ref.rc, 0) << ref.err;
  EXPECT_NEAR(p, field(ref.out, R"("ppl": ([0-9.e+-]+))"), 1e-4 * p + 5e-5) << ref.out;
  const Result q = ppl("-m " + m + " -ctk f16 -ctv f16 --kl-divergence-base " + base + " --kl-divergence");
  ASSERT_EQ(q.rc, 0) << q.err;
  EXPECT_GT(mean_kld(q), 0.0);
  EXPECT_LT(mean_kld(q), 1e-4) << q.out;
  std::printf("%s", q.out.c_str());  // the sample output in the test log
}

}  // namespace
