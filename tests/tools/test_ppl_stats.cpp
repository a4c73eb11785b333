// The pieces of oscar-perplexity on their own: log-softmax, the PPL estimate
// and its error, KLD of known distributions, quantiles, the report, and the
// base file's round trip and refusals.
#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>
#include <fstream>
#include <numeric>
#include <random>
#include <unistd.h>

#include "core/error.h"
#include "kld_base.h"
#include "ppl_stats.h"

namespace oscar::ppl {
namespace {

namespace fs = std::filesystem;

std::vector<float> logp_of(const std::vector<double>& p) {
  std::vector<float> out;
  for (double x : p) out.push_back((float)std::log(x));
  return out;
}

TEST(PplStats, LogSoftmaxIsNormalisedAndShiftInvariant) {
  const std::vector<float> logits = {1000.0f, 999.0f, 998.0f, -5.0f};
  std::vector<float> lp(4);
  log_softmax(logits, lp);
  double s = 0;
  for (float v : lp) s += std::exp((double)v);
  EXPECT_NEAR(s, 1.0, 1e-6);
  EXPECT_NEAR(lp[0] - lp[1], 1.0, 1e-4);
  EXPECT_NEAR(lp[0], -std::log(1 + std::exp(-1.0) + std::exp(-2.0)), 1e-6);
}

TEST(PplStats, AccumulatorMatchesLlamaFormulas) {
  PplAccumulator a;
  const std::vector<double> nll = {1.0, 2.0, 3.0, 4.0};
  for (double x : nll) a.add(x);
  EXPECT_DOUBLE_EQ(a.ppl(), std::exp(2.5));
  // var = mean(x^2) - mean^2 = 7.5 - 6.25 = 1.25; err = ppl * sqrt(var / (n - 1)).
  EXPECT_NEAR(a.ppl_error(), std::exp(2.5) * std::sqrt(1.25 / 3), 1e-12);
  PplAccumulator one;
  one.add(1.0);
  EXPECT_EQ(one.ppl_error(), 0.0);
}

TEST(PplStats, KldOfKnownDistributions) {
  const std::vector<double> p = {0.5, 0.25, 0.25}, q = {0.25, 0.5, 0.25};
  const KldPoint k = compare(logp_of(p), logp_of(q));
  const double want = 0.5 * std::log(2.0) + 0.25 * std::log(0.5);
  EXPECT_NEAR(k.kld, want, 1e-7);
  EXPECT_FALSE(k.same_top);
  const KldPoint self = compare(logp_of(p), logp_of(p));
  EXPECT_EQ(self.kld, 0.0);
  EXPECT_TRUE(self.same_top);
  // Unnormalised inputs (as rounded storage gives) are renormalised first.
  std::vector<float> shifted = logp_of(p);
  for (float& v : shifted) v += 0.3f;
  EXPECT_NEAR(compare(shifted, logp_of(q)).kld, want, 1e-6);
  // A base entry of probability 0 contributes nothing (no NaN).
  const std::vector<float> with_zero = {0.0f, -INFINITY}, other = {-0.1f, -2.0f};
  EXPECT_TRUE(std::isfinite(compare(with_zero, other).kld));
}

TEST(PplStats, QuantilesInterpolateLikeNumPy) {
  const std::vector<double> s = {1, 2, 3, 4, 5};
  EXPECT_DOUBLE_EQ(quantile_sorted(s, 0.5), 3.0);
  EXPECT_DOUBLE_EQ(quantile_sorted(s, 0.99), 4.96);
  EXPECT_DOUBLE_EQ(quantile_sorted(s, 0.0), 1.0);
  EXPECT_DOUBLE_EQ(quantile_sorted(s, 1.0), 5.0);
  EXPECT_EQ(quantile_sorted({}, 0.5), 0.0);
}

TEST(PplStats, SummaryOfIdenticalRunsIsExactlyZero) {
  KldSummary s;
  for (int i = 0; i < 10; ++i) s.add(1.0 + 0.1 * i, 1.0 + 0.1 * i, {0.0, true});
  const auto r = s.report();
  EXPECT_EQ(r.n, 10);
  EXPECT_EQ(r.kld_mean, 0.0);
  EXPECT_EQ(r.kld_max, 0.0);
  EXPECT_EQ(r.delta, 0.0);
  EXPECT_EQ(r.ratio, 1.0);
  EXPECT_EQ(r.same_top, 1.0);
  EXPECT_NEAR(r.corr, 1.0, 1e-12);
  const std::string text = format_report(r);
  EXPECT_NE(text.find("Same top p: 100.000"), std::string::npos) << text;
}

TEST(PplStats, SummaryStatistics) {
  KldSummary s;
  // Current run worse by 0.1 nats everywhere: ratio exp(0.1), no spread.
  for (int i = 0; i < 100; ++i) s.add(2.0 + 0.01 * i, 2.1 + 0.01 * i, {0.001 * i, i % 4 != 0});
  const auto r = s.report();
  EXPECT_NEAR(r.ln_ratio, 0.1, 1e-12);
  EXPECT_NEAR(r.ratio, std::exp(0.1), 1e-12);
  EXPECT_NEAR(r.ln_ratio_err, 0.0, 1e-7);
  EXPECT_NEAR(r.delta, r.ppl_cur - r.ppl_base, 1e-12);
  EXPECT_NEAR(r.kld_mean, 0.0495, 1e-12);
  EXPECT_NEAR(r.kld_median, 0.0495, 1e-12);
  EXPECT_NEAR(r.kld_p99, 0.098 + 0.01 * 0.001, 1e-12);
  EXPECT_DOUBLE_EQ(r.kld_max, 0.099);
  EXPECT_DOUBLE_EQ(r.kld_min, 0.0);
  EXPECT_DOUBLE_EQ(r.same_top, 0.75);
}

class KldBaseFile : public ::testing::Test {
 protected:
  void SetUp() override {
    path_ = (fs::temp_directory_path() / ("oscar-test-kld-" + std::to_string(::getpid()) + ".kld")).string();
  }
  void TearDown() override { fs::remove(path_); }
  std::string path_;
};

TEST_F(KldBaseFile, RoundTripsBothTypes) {
  for (LogprobType t : {LogprobType::F32, LogprobType::F16}) {
    KldHeader h;
    h.n_vocab = 5;
    h.n_ctx = 8;
    h.first = 4;
    h.n_chunks = 2;
    h.type = t;
    h.bos_replaced = true;
    h.decode_mode = t == LogprobType::F16;
    h.vocab_hash = 0x0123456789abcdefull;
    std::vector<int32_t> tokens(16);
    std::iota(tokens.begin(), tokens.end(), 0);
    for (int32_t& x : tokens) x %= 5;
    std::mt19937 rng(3);
    std::normal_distribution<float> nd(-3.0f, 2.0f);
    std::vector<std::vector<float>> recs;
    {
      KldBaseWriter w(path_, h, tokens);
      for (uint32_t i = 0; i < h.n_chunks * h.n_scored(); ++i) {
        std::vector<float> lp(5);
        for (float& v : lp) v = nd(rng);
        recs.push_back(lp);
      }
      // Out of order, as decode scoring writes them.
      for (uint32_t i : {3u, 0u, 5u, 1u, 4u, 2u}) w.put(i, 0.5f * (float)i, recs[i]);
      EXPECT_THROW(w.put(6, 0.0f, recs[0]), Error);  // past the header's count
      EXPECT_THROW(w.put(2, 0.0f, recs[0]), Error);  // twice
      w.finish();
    }
    EXPECT_EQ(fs::file_size(path_), h.file_bytes());
    EXPECT_EQ(h.file_bytes(), 64u + 16 * 4 + 6 * (4 + 5 * (t == LogprobType::F32 ? 4 : 2)));
    KldBaseReader r(path_);
    EXPECT_EQ(r.header().n_vocab, 5u);
    EXPECT_EQ(r.header().n_ctx, 8u);
    EXPECT_EQ(r.header().first, 4u);
    EXPECT_EQ(r.header().n_chunks, 2u);
    EXPECT_EQ(r.header().type, t);
    EXPECT_TRUE(r.header().bos_replaced);
    EXPECT_EQ(r.header().decode_mode, t == LogprobType::F16);
    EXPECT_EQ(r.header().vocab_hash, 0x0123456789abcdefull);
    EXPECT_EQ(r.tokens(), tokens);
    for (size_t i = 0; i < recs.size(); ++i) {
      float nll;
      std::vector<float> lp(5);
      r.get(i, nll, lp);
      EXPECT_EQ(nll, 0.5f * (float)i);
      std::vector<float> want = recs[i];
      round_trip(t, want);  // what the comparison does to the current run
      EXPECT_EQ(lp, want) << logprob_type_name(t);
      if (t == LogprobType::F16) {
        for (size_t j = 0; j < 5; ++j) EXPECT_NEAR(lp[j], recs[i][j], std::fabs(recs[i][j]) * 1e-3);
      }
    }
    float nll;
    std::vector<float> lp(5);
    EXPECT_THROW(r.get(6, nll, lp), Error);
  }
}

TEST_F(KldBaseFile, WriterRefusesAnIncompleteFile) {
  KldHeader h;
  h.n_vocab = 3;
  h.n_ctx = 4;
  h.first = 2;
  h.n_chunks = 1;
  KldBaseWriter w(path_, h, std::vector<int32_t>(4, 0));
  EXPECT_THROW(w.finish(), Error);
}

TEST_F(KldBaseFile, ReaderRefusesBadHeaders) {
  auto write = [&](const std::string& bytes) { std::ofstream(path_, std::ios::binary) << bytes; };
  auto refused = [&](const std::string& why) {
    try {
      KldBaseReader r(path_);
      ADD_FAILURE() << "accepted, expected: " << why;
    } catch (const Error& e) {
      EXPECT_NE(std::string(e.what()).find(why), std::string::npos) << e.what();
    }
  };
  write("");
  refused("bad magic");
  write("OSCARKL");
  refused("bad magic");
  std::string h(64, '\0');
  h.replace(0, 8, "OSCARKLD");
  h[8] = 1;
  h[12] = 64;
  write(h);
  refused("implausible header");  // all sizes zero
  h[16] = 3;   // n_vocab
  h[20] = 4;   // n_ctx
  h[24] = 2;   // first
  h[28] = 1;   // n_chunks
  write(h);
  refused("truncated");
  write(h + std::string(16, '\0') + std::string(4 + 3 * 4, '\0'));  // f32 record
  KldBaseReader ok(path_);  // exact size: accepted
  EXPECT_EQ(ok.header().n_scored(), 1u);
  std::string bad_tok = h + std::string(16, '\0') + std::string(16, '\0');
  bad_tok[64] = 9;  // token 9 >= n_vocab 3
  write(bad_tok);
  refused("out of range");
  h[32] = 7;  // log-prob type
  write(h);
  refused("unknown log-prob type");
}

TEST(KldBaseFormat, VocabHashSeesEveryText) {
  const std::vector<std::string> a = {"a", "bc"}, b = {"ab", "c"}, c = {"a", "bc"};
  EXPECT_NE(vocab_hash(a), vocab_hash(b));  // the separators count
  EXPECT_EQ(vocab_hash(a), vocab_hash(c));
  EXPECT_THROW(parse_logprob_type("bf16"), Error);
}

}  // namespace
}  // namespace oscar::ppl
