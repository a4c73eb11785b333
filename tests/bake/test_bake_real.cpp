// oscar-bake with the published Qwen3-4B rotations (testdata/) on a random
// 36-layer, head-dim-128 qwen3 model: the output is the base byte for byte
// plus Mᵀ of every layer (M as torch reads it); refusals name the problem.
#include <gtest/gtest.h>

#include "bake_test_util.h"

namespace oscar::bake::test {
namespace {

const fs::path kRotDir = fs::path(OSCAR_TEST_DATA) / "rotations" / "qwen3-4b-thinking-2507";

class BakeReal : public ::testing::Test {
 protected:
  void SetUp() override {
    if (!fs::exists(kRotDir / "k_rotation_qqt_r_h_pbr.pt"))
      GTEST_SKIP() << "test data absent: " << kRotDir << " (see testdata/README.md)";
    if (!tools_built()) GTEST_SKIP() << "oscar-bake / oscar-mkmodel not built in " << OSCAR_BIN_DIR;
    dir_ = temp_dir("bake");
  }
  void TearDown() override {
    if (!dir_.empty()) fs::remove_all(dir_);
  }
  fs::path dir_;
};

TEST_F(BakeReal, BakesPublishedRotations) {
  if (!have_torch()) GTEST_SKIP() << OSCAR_PYTHON << " cannot import torch (install python3-torch)";
  const fs::path base = make_model(dir_, "base.gguf", 36, 128);
  const fs::path out = dir_ / "rot.gguf";
  ToolRun r = run_tool("oscar-bake", "--base " + quote(base.string()) + " --rot-dir " + quote(kRotDir.string()) +
                                         " --out " + quote(out.string()), dir_);
  ASSERT_EQ(r.status, 0) << r.err;
  EXPECT_CONTAINS(r.out, "399 base tensors");
  EXPECT_CONTAINS(r.out, "36 K + 36 V rotation tensors (F32 128x128)");
  const auto k = torch_rotations(kRotDir / "k_rotation_qqt_r_h_pbr.pt", 128, 36, dir_);
  const auto v = torch_rotations(kRotDir / "v_rotation_sst_r_h_pbr.pt", 128, 36, dir_);
  expect_baked(base, out, k, v, 128);

  // Baking again is refused; with --force the rotations are replaced and the
  // result is the same file; --from-gguf reproduces it too.
  const fs::path again = dir_ / "again.gguf";
  r = run_tool("oscar-bake", "--base " + quote(out.string()) + " --rot-dir " + quote(kRotDir.string()) +
                                 " --out " + quote(again.string()), dir_);
  EXPECT_EQ(r.status, 1);
  EXPECT_CONTAINS(r.err, "already has rotation tensors (blk.0.attn_k_rot.weight, 72 in all); pass --force");
  EXPECT_FALSE(fs::exists(again));
  r = run_tool("oscar-bake", "--base " + quote(out.string()) + " --rot-dir " + quote(kRotDir.string()) +
                                 " --out " + quote(again.string()) + " --force", dir_);
  ASSERT_EQ(r.status, 0) << r.err;
  EXPECT_TRUE(read_bytes(again) == read_bytes(out));
  const fs::path copy = dir_ / "copy.gguf";
  r = run_tool("oscar-bake", "--base " + quote(base.string()) + " --from-gguf " + quote(out.string()) + " --out " +
                                 quote(copy.string()), dir_);
  ASSERT_EQ(r.status, 0) << r.err;
  EXPECT_TRUE(read_bytes(copy) == read_bytes(out));
}

TEST_F(BakeReal, RefusesWrongModelShape) {
  const fs::path out = dir_ / "rot.gguf";
  const fs::path few = make_model(dir_, "few.gguf", 2, 128);
  ToolRun r = run_tool("oscar-bake", "--base " + quote(few.string()) + " --rot-dir " + quote(kRotDir.string()) +
                                         " --out " + quote(out.string()), dir_);
  EXPECT_EQ(r.status, 1);
  EXPECT_CONTAINS(r.err, "has layer 35 but the model has 2 blocks");
  const fs::path hd64 = make_model(dir_, "hd64.gguf", 36, 64);
  r = run_tool("oscar-bake", "--base " + quote(hd64.string()) + " --rot-dir " + quote(kRotDir.string()) +
                                 " --out " + quote(out.string()), dir_);
  EXPECT_EQ(r.status, 1);
  EXPECT_CONTAINS(r.err, "is 128x128 but the model's head dim (layer 0, model config) is 64");
  EXPECT_FALSE(fs::exists(out));
}

}  // namespace
}  // namespace oscar::bake::test
