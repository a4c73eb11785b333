// The committed trained model (models/oscar-tiny): it is what the issue asks
// for, the engine reads it exactly as the training framework defined it
// (logits and tokenizer compared against the training script's own PyTorch
// model and BPE), and the file verifies.
#include <gtest/gtest.h>

#include <array>
#include <cstdio>
#include <filesystem>
#include <string>
#include <sys/wait.h>
#include "common/run_capture.h"

namespace {

using oscar::test::run_capture;

namespace fs = std::filesystem;

const std::string kSrc = OSCAR_SOURCE_DIR;
const std::string kBin = OSCAR_BIN_DIR;
const std::string kPy = OSCAR_PYTHON;
const std::string kModel = kSrc + "/models/oscar-tiny/oscar-tiny-f16.gguf";
const std::string kHeldout = kSrc + "/models/oscar-tiny/heldout.txt";

// The Python checks need numpy and torch (scripts/setup-deps.sh installs them).
bool have_torch() { return run_capture(kPy + " -c 'import numpy, torch'").first == 0; }

TEST(TrainedModel, FileVerifies) {
  auto [rc, out] = run_capture(kBin + "/oscar-gguf verify " + kModel);
  EXPECT_EQ(rc, 0) << out;
  EXPECT_EQ(out.rfind("OK ", 0), 0u) << out;
}

TEST(TrainedModel, MeetsTheIssueConstraints) {
  auto [rc, out] = run_capture(kPy + " " + kSrc + "/tests/trained/check_spec.py " + kModel);
  EXPECT_EQ(rc, 0) << out;
}

TEST(TrainedModel, EngineLogitsMatchTheTrainingFramework) {
  if (!have_torch()) GTEST_SKIP() << kPy << " lacks numpy/torch (scripts/setup-deps.sh installs them)";
  auto [rc, out] = run_capture(kPy + " " + kSrc + "/tests/trained/check_logits.py " + kBin + " " + kModel + " " +
                      kHeldout + " --tol 1e-3");
  EXPECT_EQ(rc, 0) << out;
}

// The blocked causal attention the CPU training uses (training/model.py)
// against NumPy float64 softmax attention, across its query blocks.
TEST(TrainedModel, TrainingAttentionMatchesAReference) {
  if (!have_torch()) GTEST_SKIP() << kPy << " lacks numpy/torch (scripts/setup-deps.sh installs them)";
  auto [rc, out] = run_capture(kPy + " " + kSrc + "/tests/trained/check_attention.py");
  EXPECT_EQ(rc, 0) << out;
}

TEST(TrainedModel, EngineTokenizerMatchesTheTrainingTokenizer) {
  auto [rc, out] = run_capture(kPy + " " + kSrc + "/tests/trained/check_tokenizer.py " + kBin + " " + kModel + " " +
                      kHeldout);
  EXPECT_EQ(rc, 0) << out;
}

TEST(TrainedModel, GreedyCompletionRunsOnTheDefaultPath) {
  // Not a quality judgement: the default-model path works end to end.
  auto [rc, out] = run_capture(kBin + "/oscar-cli -m " + kModel + " -p 'To install a package, run' -n 16 --temp 0 -no-cnv -t 2");
  ASSERT_EQ(rc, 0) << out;
  EXPECT_NE(out.find("To install a package, run"), std::string::npos) << out;
}

}  // namespace
