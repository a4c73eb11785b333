// The published OSCAR rotations for Qwen3-4B-Thinking-2507 (testdata/):
// they load with 36 layers of orthogonal 128x128 matrices, and every value
// equals what torch.load reads (python3-torch dumps them for comparison).
#include <gtest/gtest.h>

#include <cstring>

#include "core/error.h"
#include "torchio/rotation_set.h"
#include "torchio_test_util.h"

namespace oscar::torchio::test {
namespace {

const fs::path kRotDir = fs::path(OSCAR_TEST_DATA) / "rotations" / "qwen3-4b-thinking-2507";

class RealRotations : public ::testing::TestWithParam<const char*> {
 protected:
  void SetUp() override {
    path_ = kRotDir / GetParam();
    if (!fs::exists(path_))
      GTEST_SKIP() << "test data absent: " << path_ << " (see testdata/README.md)";
  }
  fs::path path_;
};

TEST_P(RealRotations, LoadsWithSchemaAndOrthogonality) {
  RotationSet rs = load_rotation_set(path_.string());
  EXPECT_EQ(rs.format_version, 1);
  EXPECT_EQ(rs.source_grouping, "layer");
  EXPECT_EQ(rs.objective, std::string(GetParam()).find("k_") == 0 ? "qqt_r_h_pbr" : "sst_r_h_pbr");
  EXPECT_EQ(rs.dim, 128);
  EXPECT_EQ(rs.rotation_dtype, "float32");
  ASSERT_EQ(rs.n_layers(), 36);
  int expect = 0;
  for (const auto& [id, m] : rs.rotation) {
    EXPECT_EQ(id, expect++);
    ASSERT_EQ(m.size(), 128u * 128u);
    EXPECT_LT(orthogonality_error(m, 128), 1e-6) << "layer " << id;
    ASSERT_EQ(rs.eigenvalues.at(id).size(), 128u);
  }
}

TEST_P(RealRotations, ValuesEqualTorch) {
  if (!have_torch()) GTEST_SKIP() << OSCAR_PYTHON << " cannot import torch (install python3-torch)";
  const fs::path dir = temp_dir("torchio");
  const fs::path dump = dir / "dump.bin";
  make_checkpoints("dump " + quote(path_.string()) + " " + quote(dump.string()));
  const std::vector<uint8_t> want = read_bytes(dump);
  RotationSet rs = load_rotation_set(path_.string());
  std::vector<uint8_t> got;
  for (const auto& [id, m] : rs.rotation) {
    auto b = floats_bytes(m);
    got.insert(got.end(), b.begin(), b.end());
  }
  for (const auto& [id, e] : rs.eigenvalues) {
    auto b = floats_bytes(e);
    got.insert(got.end(), b.begin(), b.end());
  }
  ASSERT_EQ(got.size(), want.size());
  EXPECT_TRUE(got == want) << "values differ from torch.load's";
  fs::remove_all(dir);
}

// Every prefix of a real checkpoint is refused with an Error (never a crash);
// sampled so the test stays fast.
TEST_P(RealRotations, TruncationsAreRefused) {
  const std::vector<uint8_t> full = read_bytes(path_);
  for (size_t n = 0; n < full.size(); n += n < 4096 ? 97 : 65521) {
    std::vector<uint8_t> cut(full.begin(), full.begin() + n);
    EXPECT_THROW(Checkpoint::parse(cut, "cut"), Error) << "prefix of " << n << " bytes";
  }
}

INSTANTIATE_TEST_SUITE_P(Published, RealRotations,
                         ::testing::Values("k_rotation_qqt_r_h_pbr.pt", "v_rotation_sst_r_h_pbr.pt"));

}  // namespace
}  // namespace oscar::torchio::test
