// oscar-perplexity end to end: its PPL against an independent NumPy
// computation (tests/tools/ppl_reference.py reads the saved base file and
// re-evaluates the chunks in float64), batching invariance, KLD of a run
// against its own base (exactly 0, 100% top-1), f16 against q4_0 KV (small
// but positive), refusal of mismatched or damaged base files, clear errors for
// bad input (stories260K: test_perplexity_stories.cpp).
#include "ppl_test_util.h"

namespace {

using namespace ppl_test;
using Perplexity = PerplexityTool;

// PPL and the saved log-probs against float64 NumPy, for a vocabulary without
// BOS (qwen3) and one that adds BOS (llama: every chunk starts with BOS).
// Several chunks share a batch (-b 128 = two sequences of 64) and physical
// batches of 48 straddle the chunks. With an f32 cache both scoring modes
// must give the same numbers.
TEST_F(Perplexity, MatchesNumPyReference) {
  ASSERT_EQ(std::system((std::string(OSCAR_PYTHON) + " -c 'import numpy'").c_str()), 0) << "python3-numpy missing";
  for (const std::string arch : {"qwen3", "llama"}) {
    for (const std::string mode : {"decode", "batch"}) {
      SCOPED_TRACE(arch + " " + mode);
      const std::string base = path(arch + "-" + mode + "-f32.kld");
      const Result r = ppl("-m " + model(arch) + " -f " + kStories + " --ppl-mode " + mode +
                           " -c 64 --chunks 3 -b 128 -ub 48 -ctk f32 -ctv f32 --kl-divergence-type f32 "
                           "--kl-divergence-base " + base);
      ASSERT_EQ(r.rc, 0) << r.err;
      EXPECT_NE(r.out.find("[1]"), std::string::npos) << r.out;
      EXPECT_NE(r.out.find("[3]"), std::string::npos) << r.out;
      EXPECT_EQ(r.out.find("[4]"), std::string::npos) << "--chunks 3 ignored: " << r.out;
      const Result ref = sh(std::string(OSCAR_PYTHON) + " " + kRefScript + " " + model(arch) + " " + base);
      ASSERT_EQ(ref.rc, 0) << ref.err;
      const double ref_ppl = field(ref.out, R"("ppl": ([0-9.e+-]+))");
      const double ref_err = field(ref.out, R"("ppl_err": ([0-9.e+-]+))");
      const double got = final_ppl(r);
      const double got_err = field(r.out, R"(PPL = [0-9.]+ \+/- ([0-9.]+))");
      // The printed PPL has 4 decimals; compare at 1e-4 relative plus that rounding.
      EXPECT_NEAR(got, ref_ppl, 1e-4 * ref_ppl + 5e-5) << arch << "\n" << ref.out;
      EXPECT_NEAR(got_err, ref_err, 1e-3 * ref_err + 5e-6) << arch;
      EXPECT_EQ(field(ref.out, R"("n_scored": ([0-9]+))"), 3 * (64 - 1 - 32)) << arch;
      EXPECT_LT(field(ref.out, R"("max_nll_diff": ([0-9.e+-]+))"), 1e-4) << arch;
      EXPECT_LT(field(ref.out, R"("max_logp_diff": ([0-9.e+-]+))"), 1e-4) << arch;
      if (arch == "llama") {  // the text itself starts with BOS
        EXPECT_EQ(field(ref.out, R"("first_token": ([0-9]+))"), field(ref.out, R"("bos": ([0-9]+))"));
      }
    }
  }
}

// How the chunks are batched must not change the result beyond rounding, in
// either mode (with an f32 cache the modes agree too).
TEST_F(Perplexity, BatchingDoesNotChangeThePerplexity) {
  const std::string common = "-m " + model("qwen3") + " -f " + kStories + " -c 64 --chunks 4 -ctk f32 -ctv f32";
  const Result a = ppl(common + " -b 64 -ub 64 --ppl-mode batch");  // one chunk per pass, one call per chunk
  ASSERT_EQ(a.rc, 0) << a.err;
  for (const std::string v : {"-b 256 -ub 37 --ppl-mode batch",   // four chunks per pass, calls straddle chunks
                              "-b 128 -ub 512 --ppl-mode batch",  // two chunks in one call
                              "-b 64 -ub 5",                      // decode, one chunk per pass
                              "-b 256 -ub 512"}) {                // decode, four chunks side by side
    const Result b = ppl(common + " " + v);
    ASSERT_EQ(b.rc, 0) << b.err;
    EXPECT_NEAR(final_ppl(a), final_ppl(b), 1e-5 * final_ppl(a) + 1e-4) << v;
  }
}

// In batch mode a chunk in one batch never reads its own cached K/V (batch
// tokens see each other at full precision), so only decode mode, the
// default, can tell KV types apart. This pins that down.
TEST_F(Perplexity, OnlyDecodeModeSeesTheKvType) {
  const std::string common = "-m " + model("qwen3") + " -f " + kStories + " -c 64 --chunks 2 -b 128 -ub 512";
  const double batch_f32 = final_ppl(ppl(common + " --ppl-mode batch -ctk f32 -ctv f32"));
  const double batch_q4 = final_ppl(ppl(common + " --ppl-mode batch -ctk q4_0 -ctv q4_0"));
  EXPECT_EQ(batch_f32, batch_q4);
  const Result dec = ppl(common + " -ctk q4_0 -ctv q4_0");
  ASSERT_EQ(dec.rc, 0) << dec.err;
  EXPECT_NE(final_ppl(dec), batch_f32);
}

// A run compared with its own base: KLD exactly 0, same top token everywhere,
// no PPL change, with the default f16 storage (the comparison sees the
// current log-probs through the same rounding).
TEST_F(Perplexity, KldAgainstItsOwnBaseIsZero) {
  for (const std::string type : {"f16", "f32"}) {
    const std::string base = path("self-" + type + ".kld");
    const std::string common = "-m " + model("llama") + " -c 64 --chunks 3 -b 128 ";
    const Result w = ppl(common + "-f " + kStories + " --kl-divergence-type " + type + " --kl-divergence-base " + base);
    ASSERT_EQ(w.rc, 0) << w.err;
    const Result r = ppl(common + "--kl-divergence-base " + base + " --kl-divergence");
    ASSERT_EQ(r.rc, 0) << r.err;
    EXPECT_EQ(mean_kld(r), 0.0) << r.out;
    EXPECT_EQ(field(r.out, R"(99\.0%\s+KLD:\s+(-?[0-9.]+))"), 0.0);
    EXPECT_EQ(field(r.out, R"(Maximum KLD:\s+(-?[0-9.]+))"), 0.0);
    EXPECT_EQ(field(r.out, R"(Same top p:\s+([0-9.]+))"), 100.0) << r.out;
    EXPECT_EQ(field(r.out, R"(Mean PPL\(Q\)-PPL\(base\)\s+:\s+(-?[0-9.]+))"), 0.0);
    EXPECT_EQ(final_ppl(r), final_ppl(w)) << "PPL of the comparison run differs from the base run";
    // -f is optional with --kl-divergence; given, it must be the base's text.
    const Result again = ppl(common + "-f " + kStories + " --kl-divergence-base " + base + " --kl-divergence");
    ASSERT_EQ(again.rc, 0) << again.err;
    EXPECT_EQ(mean_kld(again), 0.0);
  }
}

// q4_0 KV against an f16 base: a real but small difference.
TEST_F(Perplexity, Q4KvAgainstF16BaseIsSmallButPositive) {
  const std::string base = path("f16.kld");
  const std::string common = "-m " + model("qwen3") + " -c 64 --chunks 4 ";
  ASSERT_EQ(ppl(common + "-f " + kStories + " --kl-divergence-base " + base).rc, 0);
  const Result r = ppl(common + "-ctk q4_0 -ctv q4_0 --kl-divergence-base " + base + " --kl-divergence");
  ASSERT_EQ(r.rc, 0) << r.err;
  const double kld = mean_kld(r);
  EXPECT_GT(kld, 0.0) << r.out;
  EXPECT_LT(kld, 0.05) << r.out;
  const double p99 = field(r.out, R"(99\.0%\s+KLD:\s+(-?[0-9.]+))");
  const double median = field(r.out, R"(Median\s+KLD:\s+(-?[0-9.]+))");
  EXPECT_GE(p99, median);
  EXPECT_GT(field(r.out, R"(Same top p:\s+([0-9.]+))"), 50.0) << r.out;
  EXPECT_NE(r.out.find("Mean PPL(Q)/PPL(base)"), std::string::npos);
}

// Base files that do not fit the run are refused with a reason.
TEST_F(Perplexity, RefusesMismatchedOrDamagedBase) {
  const std::string base = path("qwen3-c64.kld");
  ASSERT_EQ(ppl("-m " + model("qwen3") + " -f " + kStories + " -c 64 --chunks 2 --kl-divergence-base " + base).rc, 0);
  auto refused = [&](const std::string& args, const std::string& why) {
    const Result r = ppl(args + " --kl-divergence");
    EXPECT_NE(r.rc, 0) << args;
    EXPECT_NE(r.err.find(why), std::string::npos) << args << "\nstderr: " << r.err;
  };
  refused("-m " + model("qwen3") + " -c 32 --kl-divergence-base " + base, "made with -c 64");
  refused("-m " + model("qwen3") + " --ppl-mode batch --kl-divergence-base " + base, "made with --ppl-mode decode");
  refused("-m " + model("llama") + " --kl-divergence-base " + base, "BOS");
  // Same architecture, embedding padded to a larger vocabulary.
  const std::string wide = path("qwen3-wide.gguf");
  ASSERT_EQ(std::system((kBin + "/oscar-mkmodel --arch qwen3 --preset tiny --type f32 --vocab 1000 -o " + wide +
                         " 2>/dev/null").c_str()), 0);
  refused("-m " + wide + " --kl-divergence-base " + base, "vocabulary of");
  // A different text.
  const std::string other = path("other.txt");
  std::ofstream(other) << std::string(4000, 'z');
  refused("-m " + model("qwen3") + " -f " + other + " --kl-divergence-base " + base, "does not tokenize");
  // Truncated, foreign and future-version files.
  const std::string bytes = slurp(base);
  std::ofstream(path("trunc.kld"), std::ios::binary) << bytes.substr(0, bytes.size() - 7);
  refused("-m " + model("qwen3") + " --kl-divergence-base " + path("trunc.kld"), "truncated");
  std::ofstream(path("foreign.kld"), std::ios::binary) << "GGUF" << bytes.substr(4);
  refused("-m " + model("qwen3") + " --kl-divergence-base " + path("foreign.kld"), "bad magic");
  std::string v2 = bytes;
  v2[8] = 2;
  std::ofstream(path("v2.kld"), std::ios::binary) << v2;
  refused("-m " + model("qwen3") + " --kl-divergence-base " + path("v2.kld"), "version 2");
  refused("-m " + model("qwen3") + " --kl-divergence-base " + path("missing.kld"), "cannot open");
}

// Bad flags and unusable text fail with a message, never a crash or a PPL.
TEST_F(Perplexity, BadInputFailsClearly) {
  const std::string empty = path("empty.txt"), short_text = path("short.txt");
  std::ofstream(empty).flush();
  std::ofstream(short_text) << "Once upon a time, there was a cat.";
  const std::string m = "-m " + model("qwen3");
  const std::vector<std::pair<std::string, std::string>> cases = {
      {m + " -f " + kStories + " --chunks abc", "--chunks"},
      {m + " -f " + kStories + " --chunks 0", "--chunks"},
      {m + " -f " + kStories + " -c x", "-c"},
      {m + " -f " + kStories + " -c 2", "at least 4"},
      {m + " -f " + kStories + " --kl-divergence-type f8 --kl-divergence-base x", "f32 or f16"},
      {m + " -f " + kStories + " --no-such-flag", "unknown flag"},
      {m + " -f " + kStories + " --ppl-mode fast", "decode or batch"},
      {m + " -f " + kStories + " --kl-divergence", "needs --kl-divergence-base"},
      {m + " -f " + kStories + " --kl-divergence-base", "missing value"},
      {m, "missing -f"},
      {m + " -f " + empty, "is empty"},
      {m + " -f " + path("nonexistent.txt"), "cannot read"},
      {m + " -f " + short_text + " -c 64", "needs at least 128"},
      {"-f " + kStories, "missing -m"},
  };
  for (const auto& [args, why] : cases) {
    const Result r = ppl(args);
    EXPECT_NE(r.rc, 0) << args;
    EXPECT_NE(r.err.find(why), std::string::npos) << args << "\nstderr: " << r.err;
    EXPECT_EQ(r.out.find("Final estimate"), std::string::npos) << args;
  }
}

}  // namespace
