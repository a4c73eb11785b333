// ForwardOptions::profile (runtime/step_profile.h): timing a forward pass
// piece by piece changes none of its results, counts every eval, puts time
// in every piece a layer runs, and states the weight bytes of each piece as
// the file lists them.
#include <gtest/gtest.h>

#include <chrono>
#include <string>
#include <vector>

#include "core/log.h"
#include "gguf/gguf_file.h"
#include "runtime/forward.h"

#include "common/tmp_dir.h"

namespace oscar {
namespace {

using runtime::StepProfile;
using test::mkmodel;
using test::TmpDir;

struct EvalRun {
  std::vector<float> logits;  // every eval's, back to back
  double wall_seconds = 0;    // around the evals
};

// A 6-token prompt in one batch, then 4 tokens one by one (cached rows read).
EvalRun run(const model::Model& m, const quant::QuantTable& table, StepProfile* profile) {
  kv::KvCacheConfig kc;
  kc.n_ctx_seq = 32;
  kv::KvCache cache(m.config(), kc, table);
  ThreadPool pool(2);
  runtime::ForwardOptions o;
  o.profile = profile;
  runtime::Forward fwd(m, cache, pool, o);
  EvalRun r;
  const auto t0 = std::chrono::steady_clock::now();
  std::vector<runtime::BatchToken> prompt;
  for (int i = 0; i < 6; ++i) prompt.push_back({3 + 7 * i, 0, i, i == 5});
  const std::vector<float>& l = fwd.eval(prompt);
  r.logits.insert(r.logits.end(), l.begin(), l.end());
  for (int i = 6; i < 10; ++i) {
    const std::vector<float>& x = fwd.eval({{11 * i, 0, i, true}});
    r.logits.insert(r.logits.end(), x.begin(), x.end());
  }
  r.wall_seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  return r;
}

TEST(StepProfile, TimesEveryPieceAndChangesNoResult) {
  TmpDir t("step-profile");
  ASSERT_EQ(mkmodel("--preset tiny --layers 3 --type q4_k_m --seed 5 -o " + t.file("m.gguf")), 0);
  const quant::QuantTable table(detect_cpu());
  auto m = model::Model::load(t.file("m.gguf"), table, Logger::quiet());

  const EvalRun plain = run(*m, table, nullptr);
  StepProfile p;
  const EvalRun timed = run(*m, table, &p);
  EXPECT_EQ(timed.logits, plain.logits);  // bitwise: timing is all it adds
  EXPECT_EQ(p.evals, 5);
  for (int i = 0; i < StepProfile::kCount; ++i) {
    const auto piece = (StepProfile::Piece)i;
    if (piece != StepProfile::kOther) {
      EXPECT_GT(p.seconds[(size_t)i], 0.0) << StepProfile::name(piece);
    }
    EXPECT_GE(p.seconds[(size_t)i], 0.0) << StepProfile::name(piece);
  }
  // The pieces cover an eval from after its batch checks to its logits.
  EXPECT_LE(p.total_seconds(), timed.wall_seconds);
  EXPECT_GT(p.total_seconds(), 0.5 * timed.wall_seconds);

  p.clear();
  EXPECT_EQ(p.evals, 0);
  EXPECT_EQ(p.total_seconds(), 0.0);
}

// The bytes per piece against the tensor table of the file itself.
TEST(StepProfile, WeightBytesPerPieceFollowTheTensorTable) {
  TmpDir t("step-profile-bytes");
  for (const std::string extra : {"", " --tied"}) {
    const std::string path = t.file("m.gguf");
    ASSERT_EQ(mkmodel("--preset tiny --layers 2 --type q4_k_m --seed 3" + extra + " -o " + path), 0) << extra;
    const gguf::GgufFile f = gguf::GgufFile::open(path);
    double want[StepProfile::kCount] = {};
    const bool tied = f.find_tensor("output.weight") == nullptr;
    for (const gguf::TensorInfo& ti : f.tensors()) {
      const std::string& n = ti.name;
      auto ends = [&](const std::string& s) { return n.size() >= s.size() && n.compare(n.size() - s.size(), s.size(), s) == 0; };
      const double b = (double)ti.n_bytes;
      if (ends(".attn_q.weight") || ends(".attn_k.weight") || ends(".attn_v.weight")) want[StepProfile::kAttnIn] += b;
      else if (ends(".attn_output.weight")) want[StepProfile::kAttnOut] += b;
      else if (ends(".ffn_gate.weight") || ends(".ffn_up.weight")) want[StepProfile::kFfnIn] += b;
      else if (ends(".ffn_down.weight")) want[StepProfile::kFfnDown] += b;
      else if (n == "output.weight" || (tied && n == "token_embd.weight")) want[StepProfile::kLogits] += b;
    }
    const quant::QuantTable table(detect_cpu());
    auto m = model::Model::load(path, table, Logger::quiet());
    const auto got = runtime::piece_weight_bytes(*m);
    for (int i = 0; i < StepProfile::kCount; ++i)
      EXPECT_EQ(got[(size_t)i], want[i]) << StepProfile::name((StepProfile::Piece)i) << extra;
    EXPECT_GT(got[StepProfile::kLogits], 0.0) << extra;
  }
}

}  // namespace
}  // namespace oscar
